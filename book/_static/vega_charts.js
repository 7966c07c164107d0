// Draw the Vega-Lite charts of a page (the explorer of notebook 4). The book's myst-nb plugin
// (socm_lib/viz/mystnb.py) writes each chart as its specification, JSON inside <div class="vega-lite-chart">,
// and loads Vega, Vega-Lite and vega-embed from _static/vega/ before this file; vega-embed draws the chart
// with the options the specification carries (usermeta.embedOptions). No data are fetched: they are inline.
//
// A chart lays out to its container: where it is wider than the container (a phone), it is drawn again with its
// side-by-side views stacked and each view narrowed to fit, its menus keeping their choices; and again when the
// container's width changes. Below the chart, a note for print (print.css shows it instead of the menus) says
// which choices the printed chart shows, and whether they are its defaults. A chart laid out for good carries the
// class "vega-drawn" (what the PDF printer and the tests wait for).
document.addEventListener("DOMContentLoaded", function () {
  "use strict";
  var AXIS_ROOM = 70;  // pixels beside a view for its axis labels and title

  // A copy of `spec` for a container `room` pixels wide: side-by-side views stacked, none wider than the room
  // its axis leaves (a square view stays square).
  function fitted(spec, room) {
    var copy = JSON.parse(JSON.stringify(spec));
    (function fit(node) {
      if (node.hconcat) {
        node.vconcat = node.hconcat;
        delete node.hconcat;
      }
      var most = room - AXIS_ROOM;
      if (typeof node.width === "number" && node.width > most) {
        if (node.height === node.width) node.height = most;
        node.width = most;
      }
      (node.vconcat || []).forEach(fit);
    })(copy);
    return copy;
  }

  // `spec` with its menus (top-level parameters) set to `values` (name: value).
  function chosen(spec, values) {
    var copy = JSON.parse(JSON.stringify(spec));
    (copy.params || []).forEach(function (p) {
      if (values && p.name in values) p.value = values[p.name];
    });
    return copy;
  }

  // What the chart shows, in words: each menu's name and the label of its choice.
  function choices(spec, view) {
    return (spec.params || []).filter(function (p) { return p.bind && p.bind.options; }).map(function (p) {
      var value = view.signal(p.name), k = p.bind.options.indexOf(value);
      return p.bind.name.trim() + ": " + (p.bind.labels ? p.bind.labels[k] : value);
    });
  }

  function isDefault(spec, view) {
    return (spec.params || []).every(function (p) { return !p.bind || view.signal(p.name) === p.value; });
  }

  // Draw `spec` in `holder` with its menus at `values` (none: the defaults), stacked if it is wider than the
  // holder; `note` says what it shows. Resolves to {room: the holder's width, values: () => the menus' values}.
  function draw(holder, spec, note, values) {
    var target = document.createElement("div"), room = holder.clientWidth, view = null;
    holder.classList.remove("vega-drawn");
    holder.querySelectorAll(":scope > div").forEach(function (old) { old.remove(); });
    holder.appendChild(target);

    function describe() {
      note.textContent = "Printed from the explorer as it stood: " + choices(spec, view).join("; ") + " (" +
        (isDefault(spec, view) ? "its default choices" : "not its default choices") +
        "). Its menus work in the online book and in JupyterLab.";
    }

    function current() {
      var out = {};
      (spec.params || []).forEach(function (p) { if (p.bind) out[p.name] = view.signal(p.name); });
      return out;
    }

    function embed(what) {
      if (view) view.finalize();
      target.textContent = "";
      return vegaEmbed(target, what).then(function (result) {
        view = result.view;
        (spec.params || []).forEach(function (p) { if (p.bind) view.addSignalListener(p.name, describe); });
        describe();
      });
    }

    return embed(chosen(spec, values)).then(function () {
      var svg = target.querySelector("svg");
      if (room && svg && svg.getBoundingClientRect().width > room) return embed(fitted(chosen(spec, current()), room));
    }).then(function () {
      holder.classList.add("vega-drawn");
      return {room: room, values: current};
    }).catch(function (error) {
      target.textContent = "This chart could not be drawn: " + error;
      holder.classList.add("vega-drawn");
      console.error(error);
    });
  }

  document.querySelectorAll("div.vega-lite-chart").forEach(function (holder) {
    var spec = JSON.parse(holder.querySelector("script[type='application/json']").textContent);
    var note = document.createElement("p");
    note.className = "vega-print-note";
    holder.after(note);
    var drawn = draw(holder, spec, note), pending = null;
    new ResizeObserver(function () {  // drawn again when the holder's width changes (a rotated phone)
      clearTimeout(pending);
      pending = setTimeout(function () {
        drawn.then(function (state) {
          if (state && state.room !== holder.clientWidth) drawn = draw(holder, spec, note, state.values());
        });
      }, 250);
    }).observe(holder);
  });
});
