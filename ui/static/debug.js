// Squall UI: log levels (topology page) and sampling (events page), posted with ui.js's token (ui/debug_levels.py).
(function () {
  "use strict";
  function path(section, what) {
    return "api/v1/topologies/" + encodeURIComponent(section.getAttribute("data-topology")) + "/debug/" + what;
  }
  function reloadAfter(data) {
    if (data) { window.setTimeout(function () { window.location.reload(); }, 800); }
  }
  document.querySelectorAll("[data-level-set]").forEach(function (button) {
    button.addEventListener("click", function () {
      var section = button.closest("[data-topology]");
      var form = document.getElementById("level-form");
      var level = form.logger.value.trim() + "=" + form.level.value + (form.seconds.value ? ":" + form.seconds.value : "");
      window.squallUi.post(null, "set level", {levels: [level], component: form.component.value || null},
                           path(section, "levels")).then(reloadAfter);
    });
  });
  document.querySelectorAll("[data-level-reset]").forEach(function (button) {
    button.addEventListener("click", function () {
      var section = button.closest("[data-topology]");
      window.squallUi.post(null, "reset", {reset: [button.getAttribute("data-level-reset")],
                                           component: button.getAttribute("data-component") || null},
                           path(section, "levels")).then(reloadAfter);
    });
  });
  document.querySelectorAll("[data-sampling]").forEach(function (button) {
    button.addEventListener("click", function () {
      var section = button.closest("[data-topology]");
      var form = document.getElementById("sampling-form");
      var body = {component: form.component.value || null};
      if (button.getAttribute("data-sampling") === "off") { body.off = true; }
      else {
        body.percent = form.percent.value === "" ? null : Number(form.percent.value);
        if (form.seconds.value) { body.seconds = Number(form.seconds.value); }
      }
      window.squallUi.post(null, "sampling", body, path(section, "sampling")).then(reloadAfter);
    });
  });
})();
