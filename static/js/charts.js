// Renders the Plotly figures of a page from <script type="application/json" id="chart-data">
// into elements marked data-chart="<name>". No inline JS: the CSP forbids it.
// The data block sits inside the page's live region: after each htmx swap the charts are
// redrawn with Plotly.react (the layout's uirevision keeps the user's zoom).
(function () {
  "use strict";
  let lastData = null;
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
  function render() {
    const block = document.getElementById("chart-data");
    if (!block || !window.Plotly) return;
    const text = block.textContent;
    if (text === lastData) return; // the poll brought the same figures
    let figures;
    try { figures = JSON.parse(text); } catch (e) { return; }
    lastData = text;
    document.querySelectorAll("[data-chart]").forEach(function (el) {
      const fig = figures[el.getAttribute("data-chart")];
      if (!fig) return;
      const state = el.getAttribute("data-rendered");
      if (fig.empty) {
        if (state === "plot") window.Plotly.purge(el);
        const p = document.createElement("p");
        p.className = "muted chart-empty";
        p.textContent = ((fig.layout && fig.layout.title && fig.layout.title.text) || "Chart") +
          ": no samples in this window yet.";
        el.replaceChildren(p);
        el.setAttribute("data-rendered", "empty");
        return;
      }
      const config = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["sendDataToCloud"] };
      if (state === "plot") {
        window.Plotly.react(el, fig.data, themed(fig.layout), config);
      } else {
        el.replaceChildren();
        window.Plotly.newPlot(el, fig.data, themed(fig.layout), config);
      }
      el.setAttribute("data-rendered", "plot");
      el.setAttribute("data-revision", String((parseInt(el.getAttribute("data-revision") || "0", 10) || 0) + 1));
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", render);
  else render();
  document.addEventListener("htmx:afterSwap", render);
})();
