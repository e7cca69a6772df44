// Sandbar's MCP Apps view: renders a class's form and table, or the workflows'
// board, from the model the server embeds (script#sandbar-model), and talks to the
// host over postMessage with JSON-RPC 2.0 as the MCP Apps extension
// (io.modelcontextprotocol/ui, 2026-01-26) has it. It needs no network: every call
// goes through the host to the server.
(function () {
  "use strict";

  var model = JSON.parse(document.getElementById("sandbar-model").textContent);
  var app = document.getElementById("app");

  // ---- the host bridge ----
  var pending = {};
  var nextID = 1;
  function send(msg) { window.parent.postMessage(msg, "*"); }
  function request(method, params) {
    var id = nextID++;
    send({ jsonrpc: "2.0", id: id, method: method, params: params });
    return new Promise(function (resolve, reject) { pending[id] = { resolve: resolve, reject: reject }; });
  }
  function notify(method, params) { send({ jsonrpc: "2.0", method: method, params: params || {} }); }
  function answer(id, result) { send({ jsonrpc: "2.0", id: id, result: result }); }

  // view is the rendered view: its onToolInput and onToolResult take what the host
  // tells of the call the view belongs to.
  var view;
  var handlers = {
    "ui/notifications/tool-input": function (p) { if (p && p.arguments) { view.onToolInput(p.arguments); } },
    "ui/notifications/tool-result": function (p) { if (p) { view.onToolResult(p); } },
    "ui/notifications/host-context-changed": function (p) { applyContext(p); },
  };
  window.addEventListener("message", function (ev) {
    if (ev.source !== window.parent) { return; }
    var m = ev.data;
    if (!m || m.jsonrpc !== "2.0") { return; }
    if (m.method === undefined && m.id !== undefined) {
      var p = pending[m.id];
      if (!p) { return; }
      delete pending[m.id];
      if (m.error) { p.reject(new Error(m.error.message || "the host refused the request")); } else { p.resolve(m.result); }
      return;
    }
    if (m.id !== undefined) { // a request of the host's
      if (m.method === "ui/resource-teardown" || m.method === "ping") { answer(m.id, {}); return; }
      send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "not handled by this view: " + m.method } });
      return;
    }
    if (handlers[m.method]) { handlers[m.method](m.params); }
  });

  // callTool calls a server tool through the host; its answer is the tool's result:
  // {structured, text, isError}.
  function callTool(name, args) {
    return request("tools/call", { name: name, arguments: args }).then(function (r) {
      var text = (r.content || []).filter(function (c) { return c.type === "text"; }).map(function (c) { return c.text; }).join("\n");
      return { structured: r.structuredContent, text: text, isError: !!r.isError };
    }, function (err) { return { text: err.message, isError: true, rpc: true }; });
  }

  function applyContext(ctx) {
    if (!ctx) { return; }
    if (ctx.theme) { document.documentElement.dataset.theme = ctx.theme; }
    var vars = ctx.styles && ctx.styles.variables;
    if (vars) {
      Object.keys(vars).forEach(function (k) { if (vars[k]) { document.documentElement.style.setProperty(k, vars[k]); } });
    }
  }

  // ---- small DOM helpers ----
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === undefined || v === null || v === false) { return; }
      if (k === "text") { e.textContent = v; } else if (k.slice(0, 2) === "on") { e.addEventListener(k.slice(2), v); } else { e.setAttribute(k, v === true ? "" : v); }
    });
    (children || []).forEach(function (c) { if (c) { e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); } });
    return e;
  }
  function clear(e) { while (e.firstChild) { e.removeChild(e.firstChild); } }
  // own reads a key of an object's own, never one of Object's (a slot may be called
  // constructor).
  function own(o, k) { return o !== null && typeof o === "object" && Object.prototype.hasOwnProperty.call(o, k); }
  function get(o, k) { return own(o, k) ? o[k] : undefined; }

  // ---- the class view: a table of instances and a form ----
  function classView() {
    var state = { mode: "table", editing: null, namespace: "", cont: "", pages: [] };
    var header = el("header", {}, [el("h1", { text: model.class }), model.description ? el("p", { class: "desc", text: model.description }) : null]);
    var tabs = el("nav", { role: "tablist" });
    var body = el("section");
    app.appendChild(header);
    app.appendChild(tabs);
    app.appendChild(body);

    // The tabs: the table, a new instance's form, and the form of the instance being
    // edited, if any.
    function renderTabs() {
      clear(tabs);
      var all = [["table", "Instances"], ["form", "New"]];
      if (state.editing) { all.push(["edit", "Edit " + state.editing.name]); }
      all.forEach(function (t) {
        tabs.appendChild(el("button", { type: "button", role: "tab", "aria-selected": String(state.mode === t[0]), id: "tab-" + t[0],
          onclick: function () {
            if (t[0] === "form" && state.mode !== "form") { state.prefill = null; }
            show(t[0]);
            if (t[0] === "table") { load(); }
          } }, [t[1]]));
      });
    }
    function show(mode) {
      state.mode = mode;
      renderTabs();
      clear(body);
      body.appendChild(mode === "table" ? renderTable() : renderForm());
    }

    // ---- the table ----
    var table = { rows: [], note: "", error: "" };
    function renderTable() {
      var ns = el("input", { id: "filter-namespace", placeholder: "namespace (your own)", value: state.namespace });
      var slot = el("select", { id: "filter-slot" }, [el("option", { value: "", text: "any slot" })].concat(model.fields.map(function (f) {
        return el("option", { value: f.field, text: f.field });
      })));
      var val = el("input", { id: "filter-value", placeholder: "value" });
      var form = el("form", { class: "filters", onsubmit: function (ev) {
        ev.preventDefault();
        state.namespace = ns.value.trim();
        state.where = slot.value ? {} : null;
        if (slot.value) {
          // A list slot matches by membership: the filter is one value of it.
          try { state.where[slot.value] = coerce(Object.assign({}, fieldOf(slot.value), { many: false }), val.value); } catch (e) {
            table.error = slot.value + ": not JSON: " + e.message;
            drawRows(document.getElementById("results"));
            return;
          }
        }
        state.cont = "";
        state.pages = [];
        load();
      } }, [ns, slot, val, el("button", { type: "submit", id: "find", text: "Find" })]);
      var wrap = el("div", {}, [form]);
      var out = el("div", { id: "results" });
      wrap.appendChild(out);
      drawRows(out);
      return wrap;
    }
    function columns() { return model.fields.filter(function (f) { return !f.section; }).slice(0, 5); }
    function drawRows(out) {
      clear(out);
      if (table.error) { out.appendChild(el("p", { class: "error", role: "alert", text: table.error })); }
      var cols = columns();
      var head = el("tr", {}, [el("th", { text: "instance" }), el("th", { text: "namespace" })].concat(cols.map(function (f) { return el("th", { text: f.field }); })));
      var rows = table.rows.map(function (it) {
        var attrs = it.attributes || {};
        return el("tr", { class: "row", tabindex: "0", "data-name": it.name, onclick: function () { edit(it); },
          onkeydown: function (ev) { if (ev.key === "Enter") { edit(it); } } },
          [el("td", { text: it.name }), el("td", { text: it.namespace })].concat(cols.map(function (f) { return el("td", { text: display(get(attrs, f.field)) }); })));
      });
      out.appendChild(el("table", {}, [el("thead", {}, [head]), el("tbody", {}, rows)]));
      if (!table.rows.length && !table.error) { out.appendChild(el("p", { class: "muted", text: "No instances found." })); }
      var pager = el("div", { class: "pager" });
      if (state.pages.length) { pager.appendChild(el("button", { type: "button", id: "prev", text: "Previous", onclick: function () { state.cont = state.pages.pop() || ""; load(); } })); }
      if (table.next) { pager.appendChild(el("button", { type: "button", id: "next", text: "Next", onclick: function () { state.pages.push(state.cont); state.cont = table.next; load(); } })); }
      if (table.note) { pager.appendChild(el("span", { class: "muted", text: table.note })); }
      out.appendChild(pager);
    }
    var loads = 0;
    function load() {
      var mine = ++loads;
      var args = { class: model.class, limit: 20 };
      if (state.namespace) { args.namespace = state.namespace; }
      if (state.where) { args.where = state.where; }
      if (state.cont) { args.continue = state.cont; }
      return callTool(model.tools.find, args).then(function (r) {
        if (mine !== loads) { return; } // a later find's answer is the one to show
        var s = r.structured || {};
        table.error = r.isError ? r.text : "";
        table.rows = r.isError ? [] : (s.items || []);
        table.next = s.continue || "";
        table.note = s.note || "";
        var out = document.getElementById("results");
        if (out) { drawRows(out); }
      });
    }
    function edit(item) {
      state.editing = item;
      show("edit");
    }

    // ---- the form ----
    function fieldOf(name) { return model.fields.filter(function (f) { return f.field === name; })[0]; }
    function display(v) {
      if (v === undefined || v === null) { return ""; }
      return typeof v === "object" ? JSON.stringify(v) : String(v);
    }
    function renderForm() {
      var item = state.mode === "edit" ? state.editing : null;
      if (!item) { state.key = newKey(); }
      var values = item ? (item.attributes || {}) : (state.prefill || {});
      var md = item ? { name: item.name, namespace: item.namespace } : ((state.prefill && state.prefill.metadata) || {});
      var form = el("form", { id: "instance-form", novalidate: true });
      form.appendChild(el("p", { class: "error", role: "alert", id: "form-error", hidden: true }));
      form.appendChild(el("fieldset", { class: "object" }, [el("legend", { text: "Instance" }),
        row("metadata.name", "instance name", el("input", { id: "f-metadata.name", name: "metadata.name", value: md.name || "",
          readonly: !!item, pattern: "[a-z0-9]([a-z0-9.\\-]*[a-z0-9])?", placeholder: item ? "" : "generated when empty" }), false, ""),
        row("metadata.namespace", "namespace", el("input", { id: "f-metadata.namespace", name: "metadata.namespace",
          value: md.namespace || "", readonly: !!item, placeholder: "your own" }), false, "")]));
      var slots = el("fieldset", {}, [el("legend", { text: "Slots" })]);
      model.fields.forEach(function (f) { slots.appendChild(row(f.field, f.field, input(f, get(values, f.field)), f.required, f.description)); });
      form.appendChild(slots);
      form.appendChild(el("div", { class: "actions" }, [
        el("button", { type: "submit", id: "submit", text: item ? "Save" : "Create" }),
        el("span", { id: "form-status", class: "muted", role: "status" }),
      ]));
      form.addEventListener("submit", function (ev) { ev.preventDefault(); submit(form); });
      return form;
    }
    function row(key, label, control, required, help) {
      return el("div", { class: "field", "data-field": key }, [
        el("label", { for: control.id }, [label, required ? el("span", { class: "req", title: "required", text: " *" }) : null]),
        control,
        help ? el("small", { class: "help", text: help }) : null,
        el("small", { class: "field-error", id: "err-" + key, role: "alert" }),
      ]);
    }
    function input(f, value) {
      var id = "f-" + f.field;
      var common = { id: id, name: f.field, required: f.required };
      var c;
      if (f.many || f.range === "json") {
        var text = value === undefined ? "" : (f.range === "json" ? JSON.stringify(value, null, 2) : [].concat(value).map(display).join("\n"));
        c = el("textarea", Object.assign(common, { rows: 3, placeholder: f.range === "json" ? "JSON" : "one a line" }));
        c.value = text;
        if (!f.target) { return c; }
        // A list of references: a picker adds the instance chosen as a line.
        var add = el("input", { id: id + "-add", list: id + "-choices", autocomplete: "off", placeholder: "add an instance of " + f.target });
        var addChoices = el("datalist", { id: id + "-choices" });
        add.addEventListener("focus", function () { pick(f, addChoices); });
        add.addEventListener("change", function () {
          if (!add.value) { return; }
          c.value = (c.value.trim() ? c.value.trim() + "\n" : "") + add.value;
          add.value = "";
        });
        return el("span", { class: "picker" }, [c, add, addChoices]);
      }
      if (f.enum && f.enum.length) {
        var options = [el("option", { value: "", text: f.required ? "choose" : "none" })].concat(f.enum.map(function (v) { return el("option", { value: v, text: v }); }));
        if (value !== undefined && f.enum.indexOf(String(value)) < 0) {
          // A value stored before the enumeration changed stays until someone picks another.
          options.push(el("option", { value: String(value), text: String(value) + " (no longer listed)" }));
        }
        c = el("select", common, options);
        c.value = value === undefined ? "" : String(value);
        return c;
      }
      if (f.range === "boolean") {
        c = el("select", common, [el("option", { value: "", text: "unset" }), el("option", { value: "true", text: "true" }), el("option", { value: "false", text: "false" })]);
        c.value = value === undefined ? "" : String(value);
        return c;
      }
      if (f.section) {
        c = el("textarea", Object.assign(common, { rows: 6, maxlength: f.maxLength, placeholder: "Markdown" }));
        c.value = value === undefined ? "" : String(value);
        return c;
      }
      var attrs = Object.assign(common, { value: value === undefined ? "" : String(value) });
      if (f.range === "integer" || f.range === "number") {
        Object.assign(attrs, { type: "number", min: f.minimum, max: f.maximum, step: f.range === "integer" ? "1" : "any" });
      } else if (f.range === "date-time") {
        // The person's local time; saved as RFC 3339 in UTC.
        Object.assign(attrs, { type: "datetime-local", step: "1", value: value === undefined ? "" : localTime(value),
          "data-original": value === undefined ? undefined : String(value) });
      } else {
        Object.assign(attrs, { maxlength: f.maxLength });
      }
      if (f.target) {
        attrs.list = id + "-choices";
        attrs.placeholder = "an instance of " + f.target;
        attrs.autocomplete = "off";
      }
      c = el("input", attrs);
      if (f.pattern) {
        c.addEventListener("input", function () { checkPattern(f, c); });
      }
      if (!f.target) { return c; }
      var choices = el("datalist", { id: id + "-choices" });
      c.addEventListener("focus", function () { pick(f, choices); });
      return el("span", { class: "picker" }, [c, choices]);
    }
    // checkPattern checks a value as the person types, as the API server does (a
    // pattern matches anywhere unless it says ^ and $); a pattern this browser cannot
    // read is left to the server.
    function checkPattern(f, c) {
      var re;
      try { re = new RegExp(f.pattern); } catch (e) { return true; }
      var ok = !c.value || re.test(c.value);
      fieldError(f.field, ok ? "" : "must match " + f.pattern);
      return ok;
    }
    // pick fills a reference's choices with the names of the target's instances (the
    // first 200 of them, in the form's namespace), once each time the picker takes
    // the focus; the browser narrows them as the person types.
    function pick(f, list) {
      var args = { class: f.target, limit: 200 };
      var ns = document.getElementById("f-metadata.namespace");
      if (ns && ns.value) { args.namespace = ns.value; }
      callTool(model.tools.find, args).then(function (r) {
        clear(list);
        ((r.structured && r.structured.items) || []).forEach(function (it) { list.appendChild(el("option", { value: it.name })); });
      });
    }
    function fieldError(key, msg) {
      var e = document.getElementById("err-" + key);
      if (!e) { return; }
      e.textContent = msg;
      var wrap = e.parentNode;
      if (msg) { wrap.classList.add("invalid"); } else { wrap.classList.remove("invalid"); }
    }
    // localTime is a date and time as a datetime-local field shows it, in the
    // person's time zone; a value that is no date is left as it is.
    function newKey() {
      var b = new Uint8Array(16);
      crypto.getRandomValues(b);
      return "view-" + Array.prototype.map.call(b, function (x) { return (x < 16 ? "0" : "") + x.toString(16); }).join("");
    }
    function localTime(v) {
      var d = new Date(v);
      if (isNaN(d.getTime())) { return String(v); }
      var two = function (n) { return (n < 10 ? "0" : "") + n; };
      return d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()) + "T" + two(d.getHours()) + ":" +
        two(d.getMinutes()) + ":" + two(d.getSeconds());
    }
    function coerce(f, raw, local) {
      if (!f) { return raw; }
      if (f.range === "json") { return raw.trim() === "" ? undefined : JSON.parse(raw); }
      if (f.many) {
        var parts = raw.split("\n").map(function (s) { return s.trim(); }).filter(Boolean);
        return parts.length ? parts.map(function (p) { return coerce(Object.assign({}, f, { many: false }), p); }) : undefined;
      }
      if (raw === "") { return undefined; }
      if (f.range === "integer" || f.range === "number") { var n = Number(raw); return isNaN(n) ? raw : n; }
      if (f.range === "boolean") { return raw === "true"; }
      if (f.range === "date-time" && local) { var d = new Date(raw); return isNaN(d.getTime()) ? raw : d.toISOString(); }
      return raw;
    }
    function submit(form) {
      var item = state.mode === "edit" ? state.editing : null;
      var status = document.getElementById("form-status");
      var top = document.getElementById("form-error");
      top.hidden = true;
      var attrs = {};
      var bad = false;
      model.fields.forEach(function (f) {
        fieldError(f.field, "");
        var c = document.getElementById("f-" + f.field);
        var v;
        if (c.validity && c.validity.badInput) { fieldError(f.field, "not a number"); bad = true; return; }
        if (c.type === "datetime-local" && c.dataset.original !== undefined && c.value === localTime(c.dataset.original)) {
          v = c.dataset.original; // unchanged: as stored, to the millisecond
        } else {
          try { v = coerce(f, c.value, c.type === "datetime-local"); } catch (e) { fieldError(f.field, "not JSON: " + e.message); bad = true; return; }
        }
        if (f.pattern && !f.many && !checkPattern(f, c)) { bad = true; }
        if (f.required && v === undefined) { fieldError(f.field, "required"); bad = true; }
        if (v !== undefined) { attrs[f.field] = v; } else if (item && get(item.attributes, f.field) !== undefined) { attrs[f.field] = null; }
      });
      if (bad) { status.textContent = ""; return; }
      var name = document.getElementById("f-metadata.name").value.trim();
      var ns = document.getElementById("f-metadata.namespace").value.trim();
      var call;
      if (item) {
        call = callTool(model.tools.update, { class: model.class, name: item.name, namespace: item.namespace, attributes: attrs, resourceVersion: item.resourceVersion });
      } else {
        // One key for this form's instance: a second press, or the same create after
        // an answer that was lost, gets the instance the first made.
        var md = { idempotencyKey: state.key };
        if (name) { md.name = name; }
        if (ns) { md.namespace = ns; }
        var args = Object.assign({}, attrs, { metadata: md });
        call = callTool(model.tools.create, args).then(function (r) {
          // A server that serves no per-class tools (or not this one) creates with
          // entity.create.
          return r.rpc ? callTool(model.tools.createAny, { class: model.class, attributes: attrs, metadata: md }) : r;
        });
      }
      var button = document.getElementById("submit");
      button.disabled = true;
      status.textContent = item ? "Saving…" : "Creating…";
      call.then(function (r) {
        button.disabled = false;
        status.textContent = "";
        if (r.isError) { refused(r.text); return; }
        var s = r.structured || {};
        if (s.name && !s.attributes) {
          // An answer without the attributes: the form holds what was saved.
          s.attributes = {};
          Object.keys(attrs).forEach(function (k) { if (attrs[k] !== null) { s.attributes[k] = attrs[k]; } });
        }
        state.editing = s.name ? s : item;
        status.textContent = (item ? "Saved " : "Created ") + (s.namespace ? s.namespace + "/" : "") + (s.name || "");
        if (s.name) {
          state.mode = "edit";
          renderTabs();
          var n = document.getElementById("f-metadata.name"); n.value = s.name; n.readOnly = true;
          var nsi = document.getElementById("f-metadata.namespace"); nsi.value = s.namespace || ""; nsi.readOnly = true;
          document.getElementById("submit").textContent = "Save";
        }
      });
    }
    // refused shows a refusal on the fields it names (the server's slot "<field>", the
    // API server's spec.<field>), and at the top of the form when it names none. The
    // example a validation message ends with names every field, and is not read.
    function refused(text) {
      var said = text.split(/\.? Example: /)[0];
      var named = model.fields.filter(function (f) {
        var q = f.field.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
        return new RegExp("(spec\\." + q + "\\b|\"" + q + "\")").test(said);
      });
      named.forEach(function (f) { fieldError(f.field, said); });
      var top = document.getElementById("form-error");
      top.textContent = text;
      top.hidden = named.length > 0;
    }

    show("table");
    return {
      load: load,
      // A call of the class's create tool: its arguments fill the form, and the
      // instance it made opens in it.
      onToolInput: function (args) {
        if (state.mode === "edit") { return; }
        state.prefill = args;
        show("form");
      },
      onToolResult: function (result) {
        var s = result.structuredContent;
        if (result.isError || !s || !s.name) { return; }
        state.editing = s;
        show("edit");
      },
    };
  }

  // ---- the board: the caller's processes of a workflow, in columns by state ----
  function boardView() {
    var flows = Object.create(null);
    model.workflows.forEach(function (w) { flows[w.name] = w; });
    var b = { workflow: model.workflows.length ? model.workflows[0].name : "", cards: Object.create(null), error: "", focus: "" };
    var header = el("header");
    var columns = el("div", { class: "board", id: "board" });
    app.appendChild(header);
    app.appendChild(columns);

    function drawHeader() {
      clear(header);
      var w = get(flows, b.workflow);
      var pickFlow = el("select", { id: "workflow", onchange: function () { b.workflow = pickFlow.value; b.cards = Object.create(null); load(); } },
        model.workflows.map(function (f) { return el("option", { value: f.name, text: f.name }); }));
      pickFlow.value = b.workflow;
      header.appendChild(el("h1", {}, ["Workflow ", pickFlow]));
      if (w && w.description) { header.appendChild(el("p", { class: "desc", text: w.description })); }
      if (b.error) { header.appendChild(el("p", { class: "error", role: "alert", text: b.error })); }
    }
    function draw() {
      drawHeader();
      clear(columns);
      var w = get(flows, b.workflow);
      if (!w) { columns.appendChild(el("p", { class: "muted", text: "No workflow is defined." })); return; }
      w.states.forEach(function (st) {
        var cards = Object.keys(b.cards).map(function (id) { return b.cards[id]; }).filter(function (c) { return c.state === st.name; });
        columns.appendChild(el("section", { class: "column" + (st.terminal ? " terminal" : ""), "data-state": st.name }, [
          el("h2", { title: st.description || "", text: st.name + (st.terminal ? " (" + st.terminal + ")" : "") }),
        ].concat(cards.map(function (c) { return card(w, c); }))));
      });
    }
    function card(w, c) {
      // A built-in workflow's processes the server moves: they have no buttons. A held
      // call waits for people the call policy names, who decide with kubectl; no
      // tool approves, so that no model can approve a call itself.
      var moves = w.builtin ? [] : w.transitions.filter(function (t) { return t.from.indexOf(c.state) >= 0; });
      var hint = "";
      if (w.approval && c.state === w.initial) {
        hint = "Waits for a person the call policy names, who decides with kubectl sandbar approve " + c.id +
          " (or deny) -n <its namespace>; kubectl get approvals -A lists it.";
      } else if (w.builtin) {
        hint = "Run by the server.";
      }
      var node = el("article", { class: "card" + (c.id === b.focus ? " focus" : ""), "data-task": c.id }, [
        el("strong", { text: c.id }),
        c.message ? el("small", { class: "muted", text: c.message }) : null,
        hint ? el("small", { class: "hint", text: hint }) : null,
        el("div", { class: "moves" }, moves.map(function (t) {
          return el("button", { type: "button", "data-transition": t.name, title: c.state + " → " + t.to, text: t.name,
            onclick: function () { move(c, t.name); } });
        })),
        c.error ? el("small", { class: "error", role: "alert", text: c.error }) : null,
        el("button", { type: "button", class: "link", "data-history": c.id, text: c.history ? "Hide history" : "History",
          onclick: function () { history(c); } }),
      ]);
      if (c.history) {
        node.appendChild(el("ol", { class: "history" }, c.history.map(function (h) {
          return el("li", { text: (h.from ? h.from + " → " : "") + h.to + (h.transition ? " (" + h.transition + ")" : "") +
            (h.actor ? " by " + h.actor : "") + (h.time ? ", " + h.time : "") + (h.reason ? ": " + h.reason : "") });
        })));
      }
      return node;
    }
    function move(c, transition) {
      c.error = "";
      callTool(model.tools.transition, { taskId: c.id, transition: transition }).then(function (r) {
        var s = r.structured || {};
        if (r.isError) {
          c.error = r.text;
        } else {
          c.state = s.state || c.state;
          c.message = (s.progress && s.progress.message) || (s.task && s.task.statusMessage) || "";
          if (c.history) { c.history = null; history(c); }
        }
        draw();
      });
    }
    function history(c) {
      if (c.history) { c.history = null; draw(); return; }
      callTool(model.tools.history, { taskId: c.id }).then(function (r) {
        if (r.isError) { c.error = r.text; } else { c.history = (r.structured || {}).history || []; }
        draw();
      });
    }
    var loads = 0;
    var settling = 0;
    // load reads the caller's processes of the workflow shown, and draws them once
    // every page is in; an answer for a workflow or a load no longer current is
    // dropped.
    function load() {
      var mine = ++loads;
      var wf = b.workflow;
      var w = own(flows, wf) ? flows[wf] : null;
      var cards = Object.create(null);
      var pending = false;
      var failed = "";
      var page = function (cont, left) {
        var args = { workflow: wf };
        if (cont) { args.continue = cont; }
        return callTool(model.tools.active, args).then(function (r) {
          if (r.isError) { failed = r.text; return; }
          var s = r.structured || {};
          (s.processes || []).forEach(function (p) {
            var id = p.task && p.task.taskId;
            if (!id) { return; }
            var c = own(b.cards, id) ? b.cards[id] : { id: id };
            // A process just started has no state yet: it is in the initial one.
            c.state = p.state || (w ? w.initial : "");
            pending = pending || !p.state;
            c.message = (p.progress && p.progress.message) || (p.task && p.task.statusMessage) || "";
            cards[id] = c;
          });
          if (s.continue && left > 1) { return page(s.continue, left - 1); }
        });
      };
      return page("", 10).then(function () {
        if (mine !== loads || wf !== b.workflow) { return; }
        // A process that ended is no longer listed: it stays in its last column.
        Object.keys(b.cards).forEach(function (id) {
          var st = w && w.states.filter(function (x) { return x.name === b.cards[id].state; })[0];
          if (!own(cards, id) && st && st.terminal) { cards[id] = b.cards[id]; }
        });
        b.cards = cards;
        b.error = failed;
        draw();
        // While a process has no state of its own yet, look again a few times.
        settling = pending ? settling + 1 : 0;
        if (pending && settling <= 5) { setTimeout(function () { if (mine === loads) { load(); } }, 1000); }
      });
    }
    function follow(s) {
      if (s && typeof s.workflow === "string" && own(flows, s.workflow) && s.workflow !== b.workflow) {
        b.workflow = s.workflow;
        b.cards = Object.create(null);
      }
      if (s && s.task && s.task.taskId) { b.focus = s.task.taskId; }
    }
    draw();
    return {
      load: load,
      // A call of a workflow tool: the board shows its workflow and the process it
      // names.
      onToolInput: function (args) { follow(args); if (args && args.taskId) { b.focus = args.taskId; } load(); },
      onToolResult: function (result) { if (!result.isError) { follow(result.structuredContent); load(); } },
    };
  }

  // ---- start ----
  var observer = new ResizeObserver(function () {
    notify("ui/notifications/size-changed", { width: Math.ceil(document.documentElement.scrollWidth), height: Math.ceil(document.documentElement.scrollHeight) });
  });
  observer.observe(document.documentElement);
  view = model.view === "board" ? boardView() : classView();
  request("ui/initialize", { protocolVersion: "2026-01-26", appInfo: { name: "sandbar-view", version: "1" }, appCapabilities: {} })
    .then(function (r) { applyContext(r && r.hostContext); notify("ui/notifications/initialized", {}); return view.load(); })
    .catch(function (err) { app.insertBefore(el("p", { class: "error", role: "alert", text: "The host did not connect this view: " + err.message }), app.firstChild); });
})();
