// Squall UI: the profile buttons of a component's instance rows (ui/debug_inspect.py). They post with the token
// ui.js keeps in this browser, and show the stacks, the flame graph's link or the top allocations below the table.
(function () {
  "use strict";
  var root = document.body.getAttribute("data-root") || "./";
  var box = document.getElementById("message");
  var section = document.getElementById("profile");

  function say(text, isError) {
    box.hidden = false;
    box.textContent = text;
    box.className = isError ? "message error" : "message ok";
  }

  function shown(kind, data) {
    section.hidden = false;
    document.getElementById("profile-title").textContent =
      kind + " of task " + data.task + " (" + data.process + ", pid " + data.pid + ", container " + data.container + ")";
    var link = document.getElementById("profile-link");
    link.href = root + data.link;
    link.textContent = data.path.split("/").pop();
    var text = document.getElementById("profile-text");
    var image = document.getElementById("profile-image");
    image.hidden = kind !== "flame";
    if (kind === "flame") { image.src = root + data.link; }
    if (kind === "stacks") { text.textContent = data.text; }
    else if (kind === "memory") {
      text.textContent = data.allocations.map(function (a) {
        return (a.size / 1024).toFixed(1) + " KiB in " + a.count + " blocks  " + a.file + ":" + a.line + "  " + a.code;
      }).join("\n");
    } else { text.textContent = (data.total === null ? "" : data.total + " " + data.unit + ", ") + "drawn by " + data.profiler; }
  }

  document.querySelectorAll("[data-profile]").forEach(function (button) {
    button.addEventListener("click", function () {
      var cell = button.closest("[data-task]");
      var kind = button.getAttribute("data-profile");
      var task = parseInt(cell.getAttribute("data-task"), 10);
      var topology = cell.getAttribute("data-topology");
      say(kind + " of task " + task + "…", false);
      fetch(root + "api/v1/topologies/" + encodeURIComponent(topology) + "/profile", {
        method: "POST",
        headers: {"Content-Type": "application/json",
                  "Authorization": "Bearer " + (localStorage.getItem("squall-ui-token") || "")},
        body: JSON.stringify(button.hasAttribute("data-seconds")
          ? {task: task, kind: kind, seconds: parseFloat(button.getAttribute("data-seconds"))} : {task: task, kind: kind})
      }).then(function (r) {
        return r.json().then(function (data) {
          if (!r.ok) { say(data.error || ("HTTP " + r.status), true); return; }
          say(data.message, false);
          shown(kind, data);
        });
      }, function (err) { say(String(err), true); });
    });
  });
})();
