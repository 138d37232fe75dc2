// Renders the Plotly figures of a page from <script type="application/json" id="chart-data">
// into elements marked data-chart="<name>". No inline JS: the CSP forbids it.
(function () {
  "use strict";
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
    let figures;
    try { figures = JSON.parse(block.textContent); } catch (e) { return; }
    document.querySelectorAll("[data-chart]").forEach(function (el) {
      const fig = figures[el.getAttribute("data-chart")];
      if (!fig) return;
      if (fig.empty) {
        const p = document.createElement("p");
        p.className = "muted chart-empty";
        p.textContent = ((fig.layout && fig.layout.title && fig.layout.title.text) || "Chart") +
          ": no samples in this window yet.";
        el.replaceChildren(p);
        el.setAttribute("data-rendered", "empty");
        return;
      }
      window.Plotly.newPlot(el, fig.data, themed(fig.layout),
        { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["sendDataToCloud"] });
      el.setAttribute("data-rendered", "plot");
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", render);
  else render();
})();
