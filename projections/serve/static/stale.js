// Every console page: asks /health every 10 s and, while the server has stopped following the
// log, shows why its answers are not current (the X-Pitlog-Stale header) at the top. A page
// drawn before the follower stopped (the wall of tables, the alert feed) says so too.
(function () {
  "use strict";
  async function check() {
    let stale = null;
    try {
      const response = await fetch("/health", { credentials: "same-origin", cache: "no-store" });
      stale = response.headers.get("X-Pitlog-Stale");
      if (!stale && response.status !== 200) return;  // starting, or an error: no news
    } catch (error) {
      return;  // no answer at all: the page's live marker says so
    }
    let banner = document.querySelector("div.stale");
    if (stale && !banner) {
      banner = document.createElement("div");
      banner.className = "stale";
      banner.setAttribute("role", "alert");
      document.body.insertBefore(banner, document.body.firstChild);
    }
    if (stale) banner.textContent = "Not current: " + stale;
    else if (banner) banner.remove();
  }
  check();
  setInterval(check, 10000);
})();
