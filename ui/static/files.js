// Squall UI, shipped files: a new version of a file (the row's file input) to the REST API with the token.
(function () {
  "use strict";
  var root = document.body.getAttribute("data-root") || "./";
  var box = document.getElementById("message");

  function show(text, isError) {
    box.hidden = false;
    box.textContent = text;
    box.className = isError ? "message error" : "message ok";
  }

  document.querySelectorAll("[data-ship]").forEach(function (button) {
    button.addEventListener("click", function () {
      var row = button.closest("[data-alias]");
      var topology = button.closest("[data-topology]").getAttribute("data-topology");
      var alias = row.getAttribute("data-alias");
      var file = row.querySelector("input[type=file]").files[0];
      if (!file) { show("choose the new version of " + alias + " first", true); return; }
      var dryRun = button.getAttribute("data-ship") === "preview";
      var path = "api/v1/topologies/" + encodeURIComponent(topology) + "/files/" + encodeURIComponent(alias) +
        "?filename=" + encodeURIComponent(file.name) + (dryRun ? "&dry_run=true" : "");
      show("shipping " + file.name + "…", false);
      fetch(root + path, {
        method: "PUT",
        headers: {"Content-Type": "application/octet-stream",
                  "Authorization": "Bearer " + document.getElementById("token").value.trim()},
        body: file
      }).then(function (r) {
        return r.json().then(function (data) {
          if (!r.ok) { show(data.error || ("HTTP " + r.status), true); return; }
          var f = data.files[0];
          show(alias + ": version " + f.version + " (" + f.name + ", " + f.size + " bytes). " + data.message, false);
          if (!dryRun) { window.setTimeout(function () { window.location.reload(); }, 800); }
        });
      }, function (err) { show(String(err), true); });
    });
  });
})();
