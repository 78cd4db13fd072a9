// The wall of tables: refreshed when /alerts pushes an alert, and every 10 s for the last
// event times (the tiles are rendered by the server: /tables/tiles).
(function () {
  "use strict";
  const tiles = document.getElementById("tiles");
  const live = document.getElementById("live");
  let pending = null;
  async function refresh() {
    pending = null;
    const response = await fetch("/tables/tiles", { credentials: "same-origin" });
    if (response.ok) tiles.innerHTML = await response.text();
  }
  // Only the alerts raised after the page was drawn: the tiles already count the others.
  const source = new EventSource("/alerts?after=" + Number(tiles.dataset.last || 0));
  source.onopen = function () { live.textContent = "live"; live.className = "live on"; };
  source.onerror = function () { live.textContent = "reconnecting…"; live.className = "live off"; };
  source.addEventListener("alert", function () {
    if (!pending) pending = setTimeout(refresh, 300);
  });
  setInterval(refresh, 10000);
})();
