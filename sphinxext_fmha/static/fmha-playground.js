/* sphinxext-fmha: the filter playground (plain JS, no framework, no network).
 *
 * Each .fmha-playground element carries its data in a <script type="application/json">
 * (written by sphinxext_fmha/render/playground_data.py): the API's verified listing,
 * factored into segment tokens, and the filter rules the analysis observed while the
 * tree's generate.py ran. A -f value is applied here exactly as generate.py applies it:
 * the same split on the CLI and API separators, the same missing/empty part rules,
 * whole-trait dropping where the tree does that, and Python's fnmatch.fnmatch.
 *
 * ?fmha-filter=PATTERN in the page URL prefills every playground of the page.
 */
(function (global) {
  "use strict";

  var ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";
  var SHOWN_FILES = 20;
  /* Longer filters are refused (a link may carry anything; no kernel name is this long). */
  var MAX_FILTER = 10000;

  /* ---------------------------------------------------------------- fnmatch */

  /* CPython's fnmatch.translate (3.8-3.13), step by step, on code points; the result
   * is a list of items instead of regex text: "*", "?", {lit}, {never}, {set}.
   * Throws for a pattern Python's re would reject. */
  function translate(pattern) {
    var pat = Array.from(pattern);
    var n = pat.length;
    var res = [];
    var i = 0;
    function find(ch, from, to) {
      for (var q = from; q < to; q++) { if (pat[q] === ch) { return q; } }
      return -1;
    }
    while (i < n) {
      var c = pat[i];
      i += 1;
      if (c === "*") {
        if (!res.length || res[res.length - 1] !== "*") { res.push("*"); }
      } else if (c === "?") {
        res.push("?");
      } else if (c === "[") {
        var j = i;
        if (j < n && pat[j] === "!") { j += 1; }
        if (j < n && pat[j] === "]") { j += 1; }
        while (j < n && pat[j] !== "]") { j += 1; }
        if (j >= n) {
          res.push({ lit: "[" });
          continue;
        }
        /* stuff: tokens of the class text; {esc: ch} is a backslash escape */
        var stuff = [];
        var chunkTokens = function (chars) {
          return chars.map(function (ch) { return (ch === "\\" || ch === "-") ? { esc: ch } : ch; });
        };
        if (pat.slice(i, j).indexOf("-") < 0) {
          stuff = pat.slice(i, j).map(function (ch) { return ch === "\\" ? { esc: ch } : ch; });
        } else {
          var chunks = [];
          var k = pat[i] === "!" ? i + 2 : i + 1;
          for (;;) {
            k = find("-", k, j);
            if (k < 0) { break; }
            chunks.push(pat.slice(i, k));
            i = k + 1;
            k = k + 3;
          }
          var chunk = pat.slice(i, j);
          if (chunk.length) { chunks.push(chunk); } else { chunks[chunks.length - 1].push("-"); }
          for (k = chunks.length - 1; k > 0; k--) {
            var prev = chunks[k - 1];
            if (!prev.length || !chunks[k].length) { throw new Error("string index out of range"); }
            if (prev[prev.length - 1].codePointAt(0) > chunks[k][0].codePointAt(0)) {
              chunks[k - 1] = prev.slice(0, -1).concat(chunks[k].slice(1));
              chunks.splice(k, 1);
            }
          }
          chunks.forEach(function (part, index) {
            if (index) { stuff.push("-"); }
            stuff = stuff.concat(chunkTokens(part));
          });
        }
        stuff = stuff.map(function (t) { return (t === "&" || t === "~" || t === "|") ? { esc: t } : t; });
        i = j + 1;
        if (!stuff.length) {
          res.push({ never: true });
        } else if (stuff.length === 1 && stuff[0] === "!") {
          res.push("?");
        } else {
          var negate = false;
          if (stuff[0] === "!") {
            negate = true;
            stuff = stuff.slice(1);
          } else if (stuff[0] === "^" || stuff[0] === "[") {
            stuff[0] = { esc: stuff[0] };
          }
          res.push({ set: parseClass(stuff), negate: negate });
        }
      } else {
        res.push({ lit: c });
      }
    }
    return res;
  }

  /* Python's sre_parse reading of a class body: literals and lo-hi ranges. */
  function parseClass(tokens) {
    var items = [];
    var q = 0;
    function value(t) { return typeof t === "string" ? t : t.esc; }
    while (q < tokens.length) {
      var lo = value(tokens[q]);
      q += 1;
      if (tokens[q] === "-") {
        q += 1;
        if (q >= tokens.length) {
          items.push([lo, lo], ["-", "-"]);
          break;
        }
        var hi = value(tokens[q]);
        q += 1;
        if (hi.codePointAt(0) < lo.codePointAt(0)) { throw new Error("bad character range " + lo + "-" + hi); }
        items.push([lo, hi]);
      } else {
        items.push([lo, lo]);
      }
    }
    return items;
  }

  /* Whether one code point meets one item of translate() other than "*". */
  function meets(item, ch) {
    if (item === "?") { return true; }
    if (item.lit !== undefined) { return item.lit === ch; }
    if (item.never) { return false; }
    var code = ch.codePointAt(0);
    var inSet = item.set.some(function (range) {
      return range[0].codePointAt(0) <= code && code <= range[1].codePointAt(0);
    });
    return inSet !== item.negate;
  }

  /* A function of a name: what fnmatch.fnmatchcase(name, pattern) answers. Not a
   * RegExp: a backtracking engine takes exponential time on a pattern such as
   * "*_*_*_..._Z" (a link anyone can send), where Python's fnmatch does not. Every item
   * but "*" takes one code point, so the classic two-pointer wildcard match holds: each
   * stretch between stars goes where it first fits, and on a mismatch only the last
   * star takes one more code point. At most (name length) x (pattern length) steps. */
  function fnmatchMatcher(pattern) {
    var items = translate(pattern);
    var needed = items.filter(function (item) { return item !== "*"; }).length;
    return function (name) {
      var text = Array.from(name);
      if (text.length < needed) { return false; }
      var t = 0;
      var p = 0;
      var star = -1;
      var resume = 0;
      while (t < text.length) {
        if (p < items.length && items[p] === "*") {
          star = p;
          p += 1;
          resume = t;
        } else if (p < items.length && meets(items[p], text[t])) {
          p += 1;
          t += 1;
        } else if (star >= 0) {
          p = star + 1;
          resume += 1;
          t = resume;
        } else {
          return false;
        }
      }
      while (p < items.length && items[p] === "*") { p += 1; }
      return p === items.length;
    };
  }

  /* ------------------------------------------------------------------- data */

  function unpackRows(text, widths, count) {
    var rows = [];
    var previous = [];
    var pos = 0;
    for (var r = 0; r < count; r++) {
      var shared = ALPHABET.indexOf(text.charAt(pos));
      pos += 1;
      var row = previous.slice(0, shared);
      for (var c = shared; c < widths.length; c++) {
        var v = 0;
        for (var d = 0; d < widths[c]; d++) {
          v = v * ALPHABET.length + ALPHABET.indexOf(text.charAt(pos));
          pos += 1;
        }
        row.push(v);
      }
      rows.push(row);
      previous = row;
    }
    return rows;
  }

  /* The data with every kernel's tokens, name and file name rebuilt. */
  function load(data) {
    var model = { data: data, types: [] };
    data.types.forEach(function (type) {
      var rows = unpackRows(type.rows, type.widths, type.count);
      var kernels = rows.map(function (row) {
        var tokens = type.segments.map(function () { return 0; });
        var suffix = 0;
        type.columns.forEach(function (column, c) {
          if (column < 0) { suffix = row[c]; } else { tokens[column] = row[c]; }
        });
        var name = type.segments.map(function (segment, s) { return segment.tokens[tokens[s]]; }).join("");
        return { tokens: tokens, name: name, file: name + type.suffixes[suffix] + ".cpp" };
      });
      /* names a trait tests but does not write (numbered after the kernels) */
      model.types.push({ info: type, kernels: kernels, unlisted: type.unlisted || [] });
    });
    if (data.traits) {
      model.traits = unpackRows(data.traits.rows, data.traits.widths, data.traits.count);
    }
    /* [follower type, row, leader type, row]: generated with the leader, never tested */
    if (data.followers) {
      model.followers = unpackRows(data.followers.rows, data.followers.widths, data.followers.count);
    }
    return model;
  }

  /* The pattern each kernel type meets for -f filter (null: not filtered), as in
   * sphinxext_fmha.verify.filtercheck.api_patterns. "" = no -f at all. */
  function patternsFor(data, filter) {
    var patterns = data.types.map(function () { return null; });
    if (filter === "") { return patterns; }
    var text = data.cliSplit ? filter.split(data.cliSplit)[0] : filter;
    if (text === "" && data.whenEmpty) {
      patterns = patterns.map(function (_, t) {
        var p = data.whenEmpty[String(t)];
        return p === undefined ? null : p;
      });
    } else {
      var parts = data.apiSplit ? text.split(data.apiSplit) : [text];
      data.parts.forEach(function (part) {
        var pattern;
        if (part.position >= parts.length) {
          pattern = part.missing;
        } else if (parts[part.position] === "" && data.apiSplit) {
          pattern = part.empty;
        } else {
          pattern = parts[part.position];
        }
        part.types.forEach(function (t) { patterns[t] = pattern; });
      });
    }
    data.unfiltered.forEach(function (t) { patterns[t] = null; });
    return patterns;
  }

  function normcase(data, text) {
    if (data.lowercase) { text = text.toLowerCase(); }
    if (data.backslashes) { text = text.split("/").join("\\"); }
    return text;
  }

  /* What `generate.py -f filter` lists: {count, perType, selected[type][kernel], error}. */
  function select(model, filter) {
    var data = model.data;
    var patterns = patternsFor(data, filter);
    var result = { filter: filter, patterns: patterns, count: 0, perType: [], selected: [], error: null };
    var matches = null;
    if (filter.length > MAX_FILTER) {
      result.error = "This filter is " + filter.length + " characters long; the playground takes up to " +
        MAX_FILTER + ".";
    } else {
      try {
        matches = model.types.map(function (type, t) {
          var names = type.kernels.map(function (k) { return k.name; }).concat(type.unlisted);
          if (patterns[t] === null) { return names.map(function () { return true; }); }
          var match = fnmatchMatcher(normcase(data, patterns[t]));
          return names.map(function (name) { return match(normcase(data, name)); });
        });
      } catch (err) {
        result.error = "generate.py would stop with an error: " + err.message;
      }
    }
    if (matches === null) {
      matches = model.types.map(function (type) { return type.kernels.map(function () { return false; }); });
    }
    var selected = matches;
    if (model.traits && !result.error) {
      var members = data.traits.members;
      var grouped = model.types.map(function (type) { return type.kernels.map(function () { return false; }); });
      selected = model.types.map(function (type) { return type.kernels.map(function () { return false; }); });
      model.traits.forEach(function (row) {
        var all = true;
        for (var m = 0; m < row.length; m++) {
          grouped[members[m]][row[m]] = true;
          if (!matches[members[m]][row[m]]) { all = false; }
        }
        if (all) {
          for (m = 0; m < row.length; m++) { selected[members[m]][row[m]] = true; }
        }
      });
      /* a kernel in no trait is matched on its own; unlisted names are never listed */
      selected = selected.map(function (flags, t) {
        return flags.map(function (flag, k) { return grouped[t][k] ? flag : matches[t][k]; });
      });
    }
    result.selected = selected.map(function (flags, t) { return flags.slice(0, model.types[t].kernels.length); });
    if (model.followers && !result.error) {
      model.followers.forEach(function (row) {
        result.selected[row[0]][row[1]] = result.selected[row[2]][row[3]];
      });
    }
    result.perType = selected.map(function (flags) {
      return flags.reduce(function (sum, flag) { return sum + (flag ? 1 : 0); }, 0);
    });
    result.count = result.perType.reduce(function (a, b) { return a + b; }, 0);
    return result;
  }

  function selectedFiles(model, result) {
    var files = [];
    model.types.forEach(function (type, t) {
      type.kernels.forEach(function (k, i) { if (result.selected[t][i]) { files.push(k.file); } });
    });
    return files.sort();
  }

  /* Per kernel type and segment: [token, meaning, baseline count, kept count]. */
  function breakdown(model, result) {
    return model.types.map(function (type, t) {
      var segments = [];
      type.info.segments.forEach(function (segment, s) {
        if (segment.literal || segment.tokens.length < 2) { return; }
        var base = segment.tokens.map(function () { return 0; });
        var kept = segment.tokens.map(function () { return 0; });
        type.kernels.forEach(function (k, i) {
          base[k.tokens[s]] += 1;
          if (result.selected[t][i]) { kept[k.tokens[s]] += 1; }
        });
        segments.push({
          label: segment.label,
          tokens: segment.tokens.map(function (token, x) {
            return { token: token, meaning: segment.meanings[x], base: base[x], kept: kept[x] };
          }).filter(function (row) { return row.base > 0; })
        });
      });
      return { name: type.info.name, segments: segments };
    });
  }

  /* Python's shlex.quote. */
  function shellQuote(text) {
    if (!text) { return "''"; }
    if (!/[^\w@%+=:,./-]/.test(text)) { return text; }
    return "'" + text.split("'").join("'\"'\"'") + "'";
  }

  function command(data, filter) {
    var head = data.command[0];
    var tail = data.command[1];
    return filter === "" ? head + " " + tail : head + " -f " + shellQuote(filter) + " " + tail;
  }

  /* --------------------------------------------------------------------- UI */

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function code(text) { return el("code", { "class": "docutils literal notranslate" }, [text || "(no token)"]); }

  function tokenList(rows, withCounts) {
    var span = el("span", { "class": "fmha-pg-tokens" });
    if (!rows.length) { span.appendChild(document.createTextNode("none")); }
    rows.forEach(function (row, index) {
      if (index) { span.appendChild(document.createTextNode(" ")); }
      var item = code(row.token);
      if (row.meaning) { item.setAttribute("title", row.meaning); }
      span.appendChild(item);
      if (withCounts) { span.appendChild(document.createTextNode("\u00a0" + row.kept)); }
    });
    return span;
  }

  function render(root, model, filter) {
    var data = model.data;
    var result = select(model, filter);
    var out = root.querySelector(".fmha-pg-result");
    var previous = out.querySelector("details.fmha-pg-breakdown");
    var open = previous ? previous.open : false;
    out.setAttribute("data-fmha-count", String(result.count));
    out.setAttribute("data-fmha-filter", filter);
    out.textContent = "";
    var summary = el("p", { "class": "fmha-pg-summary" }, [
      el("strong", {}, [String(result.count)]),
      " of " + data.total + " kernels" + (filter === "" ? " (no -f)" : "")
    ]);
    out.appendChild(summary);
    if (result.error) { out.appendChild(el("p", { "class": "fmha-pg-error" }, [result.error])); }
    var perType = el("ul", { "class": "fmha-pg-types" });
    model.types.forEach(function (type, t) {
      var pattern = result.patterns[t];
      perType.appendChild(el("li", {}, [
        code(type.info.name), ": " + result.perType[t] + " of " + type.kernels.length,
        pattern === null ? " (not filtered)" : " (pattern ",
        pattern === null ? "" : code(pattern === "" ? "''" : pattern),
        pattern === null ? "" : ")"
      ]));
    });
    out.appendChild(perType);
    var details = el("details", { "class": "fmha-pg-breakdown" }, [el("summary", {}, ["Kept and dropped tokens per segment"])]);
    details.open = open;
    breakdown(model, result).forEach(function (type) {
      var table = el("table", { "class": "fmha-pg-table docutils" }, [
        el("caption", {}, [type.name]),
        el("thead", {}, [el("tr", {}, [el("th", {}, ["segment"]), el("th", {}, ["kept (kernels)"]), el("th", {}, ["dropped"])])])
      ]);
      var body = el("tbody");
      type.segments.forEach(function (segment) {
        var kept = segment.tokens.filter(function (r) { return r.kept > 0; });
        var dropped = segment.tokens.filter(function (r) { return r.kept === 0; });
        body.appendChild(el("tr", {}, [
          el("td", {}, [segment.label]),
          el("td", {}, [tokenList(kept, true)]),
          el("td", {}, [tokenList(dropped, false)])
        ]));
      });
      table.appendChild(body);
      details.appendChild(table);
    });
    out.appendChild(details);
    var files = selectedFiles(model, result);
    var list = el("ol", { "class": "fmha-pg-files" });
    files.slice(0, SHOWN_FILES).forEach(function (file) { list.appendChild(el("li", {}, [code(file)])); });
    out.appendChild(el("p", {}, [files.length > SHOWN_FILES
      ? "The first " + SHOWN_FILES + " of " + files.length + " files (alphabetical):"
      : files.length ? "The files:" : "No file matches."]));
    if (files.length) { out.appendChild(list); }
    var cmd = root.querySelector(".fmha-pg-command code");
    cmd.textContent = command(data, filter);
    var share = root.querySelector(".fmha-pg-share");
    if (share) {
      share.setAttribute("href", "?fmha-filter=" + encodeURIComponent(filter) + "#" + root.id);
    }
    return result;
  }

  function copyCommand(root) {
    var text = root.querySelector(".fmha-pg-command code").textContent;
    var status = root.querySelector(".fmha-pg-copied");
    function done(message) { if (status) { status.textContent = message; } }
    if (global.navigator && navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { done("Copied."); },
        function () { done("Select the command and copy it."); });
    } else {
      done("Select the command and copy it.");
    }
  }

  function init(root) {
    var script = root.querySelector("script.fmha-playground-data");
    if (!script || root.getAttribute("data-fmha-ready")) { return null; }
    var model = load(JSON.parse(script.textContent));
    var input = root.querySelector(".fmha-pg-input");
    var form = root.querySelector(".fmha-pg-form");
    var timer = null;
    var update = function () { render(root, model, input.value); };
    input.addEventListener("input", function () {
      if (timer) { clearTimeout(timer); }
      timer = setTimeout(update, 120);
    });
    form.addEventListener("submit", function (event) { event.preventDefault(); update(); });
    var copy = root.querySelector(".fmha-pg-copy");
    if (copy) {
      copy.hidden = false;
      copy.addEventListener("click", function () { copyCommand(root); });
    }
    root.querySelector(".fmha-pg-live").hidden = false;
    var params = new URLSearchParams(global.location ? global.location.search : "");
    var shared = params.get("fmha-filter");
    if (shared !== null) { input.value = shared; }
    root.setAttribute("data-fmha-ready", "1");
    root.fmhaModel = model;
    update();
    return model;
  }

  var api = {
    translate: translate,
    fnmatchMatcher: fnmatchMatcher,
    load: load,
    patternsFor: patternsFor,
    select: select,
    selectedFiles: selectedFiles,
    shellQuote: shellQuote,
    command: command,
    /* For tests: every file `-f filter` lists on the playground `root`. */
    filesFor: function (root, filter) { return selectedFiles(root.fmhaModel, select(root.fmhaModel, filter)); }
  };
  global.fmhaPlayground = api;
  if (typeof module !== "undefined" && module.exports) { module.exports = api; }
  if (typeof document !== "undefined") {
    var start = function () {
      Array.prototype.forEach.call(document.querySelectorAll(".fmha-playground"), init);
    };
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", start);
    } else {
      start();
    }
  }
})(typeof window !== "undefined" ? window : globalThis);
