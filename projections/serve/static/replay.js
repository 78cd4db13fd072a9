// Shoe replay: the state after step i is rebuilt from the steps (JSON in the page): the hand
// of the current round box by box, the discard rack in rack order, the event list.
(function () {
  "use strict";
  const steps = JSON.parse(document.getElementById("steps").textContent);
  const player = document.getElementById("player");
  const faces = document.getElementById("faces");
  const $ = function (id) { return document.getElementById(id); };
  let at = Math.min(Number(player.dataset.start || 0), Math.max(steps.length - 1, 0));

  function picture(label, kind, fresh) {
    const tpl = faces.querySelector("template[data-" + kind + '="' + label + '"]');
    const node = tpl.content.firstElementChild.cloneNode(true);
    if (fresh) node.classList.add("fresh");
    return node;
  }

  // An event's text, with what a card drawn did in its round (the deciding third card, a
  // diverted or redrawn one: sql/cards.sql, card_role).
  function described(s) { return s.role ? s.text + " — " + s.role : s.text; }

  // The events list, drawn once; each step toggles classes.
  const list = $("events");
  steps.forEach(function (s, i) {
    const li = document.createElement("li");
    li.dataset.index = String(i);
    [s.time, "#" + s.seq, s.round == null ? "" : "r" + s.round, s.type, described(s)]
      .forEach(function (text) {
        const span = document.createElement("span");
        span.textContent = text;
        li.appendChild(span);
      });
    if (s.role) li.classList.add("has-role");
    li.addEventListener("click", function () { show(i); });
    list.appendChild(li);
  });

  function show(i) {
    if (!steps.length) return;
    at = Math.max(0, Math.min(steps.length - 1, i));
    const s = steps[at];
    const hand = { left: [], middle: [], right: [] };
    const rack = [];
    let round = null;
    for (let k = 0; k <= at; k++) {
      const x = steps[k];
      if (x.round !== round && x.round != null) {
        round = x.round;
        hand.left = []; hand.middle = []; hand.right = [];
      }
      if (x.type === "CardDrawn" && hand[x.box]) hand[x.box].push([x.card, k === at]);
      if (x.type === "CardsRacked") {
        x.racked.forEach(function (c) { rack.push([c, "small", k === at]); });
        hand.left = []; hand.middle = []; hand.right = [];
      }
      if (x.type === "CardBurned") rack.push([x.card, "back", k === at]);
      if (x.type === "CardFoundFaceUp") rack.push([x.card, "small", k === at]);
    }
    ["left", "middle", "right"].forEach(function (box) {
      const el = $("box-" + box);
      el.replaceChildren.apply(el, hand[box].map(function (c) {
        return picture(c[0], "card", c[1]);
      }));
    });
    const rackEl = $("rack");
    rackEl.replaceChildren.apply(rackEl, rack.map(function (c) {
      return picture(c[0], c[1], c[2]);
    }));
    rackEl.scrollTop = rackEl.scrollHeight;  // the newest racked cards in view
    $("rack-count").textContent = rack.length + " cards";
    $("round").textContent = s.round == null ? "between rounds" : "round " + s.round;
    $("pos").textContent = "event " + (at + 1) + " of " + steps.length;
    $("now-time").textContent = s.time;
    $("now-seq").textContent = "#" + s.seq;
    $("now-type").textContent = s.type;
    $("now-text").textContent = described(s);
    const shoe = location.pathname.split("/").pop();
    const dispute = $("dispute");
    if (s.round == null) {
      dispute.removeAttribute("href");
      dispute.classList.add("disabled");
    } else {
      dispute.href = "/dispute?table=" + encodeURIComponent(player.dataset.table) + "&shoe=" +
        shoe + "&round=" + s.round;
      dispute.classList.remove("disabled");
    }
    Array.from(list.children).forEach(function (li, k) {
      li.className = (k === at ? "current" : (k > at ? "future" : "")) +
        (steps[k].role ? " has-role" : "");
    });
    const current = list.children[at];
    if (current) list.scrollTop = current.offsetTop - list.clientHeight / 2;  // the list only
    history.replaceState(null, "", "?table=" + encodeURIComponent(player.dataset.table) +
      "&seq=" + s.seq);
  }

  function roundStart(from, direction) {
    // The first event of the next (or previous) round after (before) `from`.
    const current = steps[from] ? steps[from].round : null;
    let k = from + direction;
    while (k >= 0 && k < steps.length) {
      const r = steps[k].round;
      if (r != null && r !== current &&
          (k === 0 || steps[k - 1].round !== r)) return k;
      k += direction;
    }
    return direction > 0 ? steps.length - 1 : 0;
  }

  $("first").onclick = function () { show(0); };
  $("prev").onclick = function () { show(at - 1); };
  $("next").onclick = function () { show(at + 1); };
  $("last").onclick = function () { show(steps.length - 1); };
  $("nextround").onclick = function () { show(roundStart(at, 1)); };
  $("prevround").onclick = function () { show(roundStart(at, -1)); };
  document.addEventListener("keydown", function (ev) {
    if (ev.target.closest && ev.target.closest("input, select, textarea")) return;
    const keys = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: steps.length - 1,
                   PageDown: roundStart(at, 1), PageUp: roundStart(at, -1) };
    if (ev.key in keys) { ev.preventDefault(); show(keys[ev.key]); }
  });
  show(at);
})();
