// Small progressive enhancements; every page works without them.
(function () {
  "use strict";
  // Relative times: <time datetime="ISO" data-relative> shows "3 min ago", absolute on hover.
  function rel(ms) {
    const s = Math.round(ms / 1000), a = Math.abs(s);
    const txt = a < 60 ? a + " s" : a < 3600 ? Math.round(a / 60) + " min" : a < 86400 ? Math.round(a / 3600) + " h" : Math.round(a / 86400) + " d";
    return s >= 0 ? txt + " ago" : "in " + txt;
  }
  function refreshTimes(root) {
    root.querySelectorAll("time[data-relative]").forEach(function (el) {
      const t = Date.parse(el.getAttribute("datetime"));
      if (!isNaN(t)) { el.textContent = rel(Date.now() - t); el.title = new Date(t).toISOString(); }
    });
  }
  // Countdowns: <span data-countdown-ms="12000"> ticks down every second.
  function tickCountdowns() {
    document.querySelectorAll("[data-countdown-ms]").forEach(function (el) {
      let left = parseInt(el.getAttribute("data-countdown-ms"), 10) - 1000;
      if (isNaN(left)) return;
      if (left < 0) left = 0;
      el.setAttribute("data-countdown-ms", String(left));
      el.textContent = (left / 1000).toFixed(0) + " s";
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    refreshTimes(document);
    setInterval(tickCountdowns, 1000);
    const picker = document.querySelector("[data-cluster-picker]");
    if (picker) picker.addEventListener("change", function () { window.location = "/clusters/" + encodeURIComponent(picker.value) + "/"; });
    // Pause button for live regions: toggles a class that htmx polling triggers check.
    document.querySelectorAll("[data-pause-live]").forEach(function (btn) {
      btn.addEventListener("click", function () {
        const paused = document.body.classList.toggle("live-paused");
        btn.textContent = paused ? "Resume" : "Pause";
        btn.setAttribute("aria-pressed", paused ? "true" : "false");
      });
    });
  });
  // Forms marked data-autosubmit apply a checkbox or select change at once (filters live in the URL).
  document.addEventListener("change", function (e) {
    const form = e.target.closest && e.target.closest("form[data-autosubmit]");
    if (form && (e.target.type === "checkbox" || e.target.tagName === "SELECT")) form.submit();
  });
  document.addEventListener("htmx:afterSwap", function (e) {
    refreshTimes(e.target);
    // Lists marked data-keep="N" (the live tail, newest first) keep their first N items.
    const keep = parseInt(e.target.getAttribute && e.target.getAttribute("data-keep"), 10);
    while (keep >= 0 && e.target.children.length > keep) e.target.lastElementChild.remove();
  });
  // Live regions (hx-trigger="every Ns" plus data-live) skip their polls while paused;
  // no trigger filters, because the CSP forbids eval.
  document.addEventListener("htmx:beforeRequest", function (e) {
    if (document.body.classList.contains("live-paused") && e.target.closest("[data-live]")) e.preventDefault();
  });
})();
