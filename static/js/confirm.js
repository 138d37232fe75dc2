// Confirmation for destructive or bulk actions, without inline JS (CSP):
// <form data-confirm="question">, or <button data-confirm-button="question"> for one submitter.
// (htmx buttons use hx-confirm; all of them call window.confirm, never eval.)
(function () {
  "use strict";
  if (window.opsdashConfirm) return;
  window.opsdashConfirm = true;
  document.addEventListener("submit", function (e) {
    const button = e.submitter && e.submitter.closest("[data-confirm-button]");
    const question = button ? button.getAttribute("data-confirm-button")
      : (e.target.closest("form[data-confirm]") || { getAttribute: function () { return null; } }).getAttribute("data-confirm");
    if (question && !window.confirm(question)) e.preventDefault();
  }, true);
})();
