// Renders the Plotly figures of a page from <script type="application/json" id="chart-data">
// into elements marked data-chart="<name>". No inline JS: the CSP forbids it.
// plotly.js (the URL in data-plotly-src on the charts' container) is fetched only once the
// charts come near the viewport, so a page read from the top never pays for it; empty
// figures need no Plotly and show their placeholder at once.
// The data block sits inside the page's live region: after each htmx swap the charts are
// redrawn with Plotly.react (the layout's uirevision keeps the user's zoom).
(function () {
  "use strict";
  let lastData = null;
  let plotly = "idle"; // idle -> loading -> ready (or failed)
  function themed(layout) {
    const css = getComputedStyle(document.documentElement);
    const fg = css.getPropertyValue("--fg").trim() || "#1b1f24";
    const line = css.getPropertyValue("--line").trim() || "#d8dde3";
    const out = Object.assign({}, layout, {
      paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
      font: { color: fg },
    });
    out.xaxis = Object.assign({ gridcolor: line }, layout.xaxis || {});
    out.yaxis = Object.assign({ gridcolor: line }, layout.yaxis || {});
    return out;
  }
  function showEmpty(el, fig) {
    if (el.getAttribute("data-rendered") === "plot" && window.Plotly) window.Plotly.purge(el);
    const p = document.createElement("p");
    p.className = "muted chart-empty";
    p.textContent = ((fig.layout && fig.layout.title && fig.layout.title.text) || "Chart") +
      ": no samples in this window yet.";
    el.replaceChildren(p);
    el.setAttribute("data-rendered", "empty");
  }
  let generation = 0;
  function draw(el, fig) {
    const config = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["sendDataToCloud"] };
    if (el.getAttribute("data-rendered") === "plot") {
      window.Plotly.react(el, fig.data, themed(fig.layout), config);
    } else {
      el.replaceChildren();
      window.Plotly.newPlot(el, fig.data, themed(fig.layout), config);
    }
    el.setAttribute("data-rendered", "plot");
    el.setAttribute("data-revision", String((parseInt(el.getAttribute("data-revision") || "0", 10) || 0) + 1));
  }
  function render() {
    const block = document.getElementById("chart-data");
    if (!block) return;
    const text = block.textContent;
    const ready = plotly === "ready" && !!window.Plotly;
    if (text === lastData) return; // the poll brought the same figures
    let figures;
    try { figures = JSON.parse(text); } catch (e) { return; }
    if (ready) lastData = text; // until Plotly is here, the same figures are drawn again later
    const queue = [];
    document.querySelectorAll("[data-chart]").forEach(function (el) {
      const fig = figures[el.getAttribute("data-chart")];
      if (!fig) return;
      if (fig.empty) showEmpty(el, fig);
      else if (ready) queue.push([el, fig]);
    });
    // One chart per task: the page stays responsive while five charts are drawn, and a
    // newer set of figures (the next poll) replaces what is still queued.
    const mine = ++generation;
    (function next() {
      if (mine !== generation || !queue.length) return;
      const job = queue.shift();
      draw(job[0], job[1]);
      setTimeout(next, 0);
    })();
  }
  function loadPlotly(src) {
    if (plotly !== "idle") return;
    plotly = "loading";
    const script = document.createElement("script");
    script.src = src;
    script.onload = function () { plotly = "ready"; render(); };
    script.onerror = function () { plotly = "failed"; };
    document.head.appendChild(script);
  }
  function start() {
    render();
    const host = document.querySelector("[data-plotly-src]");
    if (!host) return;
    const src = host.getAttribute("data-plotly-src");
    if (!("IntersectionObserver" in window)) { loadPlotly(src); return; }
    const seen = new IntersectionObserver(function (entries) {
      if (entries.some(function (e) { return e.isIntersecting; })) {
        seen.disconnect();
        loadPlotly(src);
      }
    }, { rootMargin: "200px 0px" });
    seen.observe(host);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
  document.addEventListener("htmx:afterSwap", render);
})();
