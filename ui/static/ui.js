// Squall UI: keeps the token (this browser's localStorage) and posts actions to the REST API.
(function () {
  "use strict";
  var root = document.body.getAttribute("data-root") || "./";
  var tokenInput = document.getElementById("token");
  var box = document.getElementById("message");
  tokenInput.value = localStorage.getItem("squall-ui-token") || "";

  document.getElementById("token-form").addEventListener("submit", function (e) {
    e.preventDefault();
    localStorage.setItem("squall-ui-token", tokenInput.value.trim());
    show("token kept in this browser", false);
  });

  function show(text, isError) {
    box.hidden = false;
    box.textContent = text;
    box.className = isError ? "message error" : "message ok";
  }

  function post(topology, action, body, path) {
    show(action + "…", false);
    return fetch(root + (path || "api/v1/topology/" + encodeURIComponent(topology) + "/" + action), {
      method: "POST",
      headers: {"Content-Type": "application/json", "Authorization": "Bearer " + (tokenInput.value.trim())},
      body: JSON.stringify(body || {})
    }).then(function (r) {
      return r.json().then(function (data) {
        if (!r.ok) { show(data.error || data.detail || ("HTTP " + r.status), true); return null; }
        show(data.message, false);
        return data;
      });
    }, function (err) { show(String(err), true); return null; });
  }

  window.squallUi = {post: post, show: show};  // for the pages' own scripts (debug.js)

  document.querySelectorAll("[data-action]").forEach(function (button) {
    button.addEventListener("click", function () {
      var section = button.closest("[data-topology]");
      var topology = section.getAttribute("data-topology");
      var action = button.getAttribute("data-action");
      if (button.getAttribute("data-confirm") && !window.confirm(button.getAttribute("data-confirm"))) { return; }
      var body = {};
      if (action === "restart") {
        var c = document.getElementById("restart-container").value;
        if (c !== "") { body.container = parseInt(c, 10); }
      }
      post(topology, action, body).then(function (data) {
        if (data && action === "kill") { window.location.href = root; }
        else if (data) { window.setTimeout(function () { window.location.reload(); }, 800); }
      });
    });
  });

  var form = document.getElementById("update-form");
  if (form) {
    form.querySelectorAll("[data-update]").forEach(function (button) {
      button.addEventListener("click", function () {
        var topology = form.closest("[data-topology]").getAttribute("data-topology");
        var parallelism = {};
        form.querySelectorAll("input").forEach(function (input) {
          if (input.value !== input.getAttribute("data-current")) {
            parallelism[input.name] = /^-?\d+$/.test(input.value) ? parseInt(input.value, 10) : input.value;
          }
        });
        var dryRun = button.getAttribute("data-update") === "preview";
        if (Object.keys(parallelism).length === 0) { show("change a component's parallelism first", true); return; }
        post(topology, "update", {parallelism: parallelism, dry_run: dryRun}).then(function (data) {
          if (!data) { return; }
          var diff = document.getElementById("update-diff");
          diff.hidden = false;
          diff.textContent = data.lines.join("\n");
          if (!dryRun) { window.setTimeout(function () { window.location.reload(); }, 1500); }
        });
      });
    });
  }

  function postHealth(button, change, body) {
    var topology = button.closest("[data-topology]").getAttribute("data-topology");
    var path = "api/v1/topologies/" + encodeURIComponent(topology) + "/health/" + change;
    post(topology, change, body, path).then(function (data) {
      if (data) { window.setTimeout(function () { window.location.reload(); }, 800); }
    });
  }
  document.querySelectorAll("[data-health-mode]").forEach(function (button) {
    button.addEventListener("click", function () {
      postHealth(button, "mode", {mode: button.getAttribute("data-health-mode")});
    });
  });
  document.querySelectorAll("[data-health-apply]").forEach(function (button) {
    button.addEventListener("click", function () {
      postHealth(button, "apply", {decision: button.getAttribute("data-health-apply")});
    });
  });

  document.querySelectorAll("[data-report]").forEach(function (button) {
    button.addEventListener("click", function () {
      var topology = button.closest("[data-topology]").getAttribute("data-topology");
      post(topology, "update", {report: button.getAttribute("data-report")}).then(function (data) {
        if (data) { document.getElementById("dry-run").textContent = data.lines.join("\n"); }
      });
    });
  });
})();
