// The live alert feed: /alerts pushes each new alert (server-sent events); the rows are
// rendered by the server (/alerts-page/rows) so times and wording have one definition.
(function () {
  "use strict";
  const feed = document.getElementById("feed");
  const live = document.getElementById("live");
  const empty = document.getElementById("empty");
  let last = Number(feed.dataset.last || 0);
  const query = feed.dataset.query || "";
  let pending = null;

  async function fetchNew() {
    pending = null;
    const url = "/alerts-page/rows?after=" + last + (query ? "&" + query : "");
    const response = await fetch(url, { credentials: "same-origin" });
    if (!response.ok) return;
    const tpl = document.createElement("template");
    tpl.innerHTML = (await response.text()).trim();
    const rows = Array.from(tpl.content.querySelectorAll("tr"));
    rows.reverse().forEach(function (row) {  // newest first: insert the oldest new one first
      const seq = Number(row.dataset.seq);
      if (seq <= last && feed.querySelector('tr[data-seq="' + seq + '"]')) return;
      row.classList.add("new");
      feed.insertBefore(row, feed.firstChild);
      const sev = row.className.match(/sev-row-(\w+)/);
      const counter = sev && document.getElementById("count-" + sev[1]);
      if (counter) counter.textContent = String(Number(counter.textContent) + 1);
    });
    rows.forEach(function (row) { last = Math.max(last, Number(row.dataset.seq)); });
    if (empty && feed.rows.length) empty.hidden = true;
  }

  const source = new EventSource("/alerts?after=" + last);
  source.onopen = function () { live.textContent = "live"; live.className = "live on"; };
  source.onerror = function () { live.textContent = "reconnecting…"; live.className = "live off"; };
  source.addEventListener("alert", function (event) {
    if (Number(event.lastEventId) <= last) return;
    if (!pending) pending = setTimeout(fetchNew, 150);  // one fetch for a burst of alerts
  });
})();
