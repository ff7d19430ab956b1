/*
 * pyrospy's html report (src/output/out_html.c writes the data): a flame
 * graph drawn root at the top on a canvas, a table of functions, search,
 * an inverted view, a thread picker and the comparison of two values of a
 * tag key (two flame graphs and their diff).  No framework, no network.
 * Every name comes from the profiled program: it reaches the page only as
 * text (textContent, fillText), never as markup.
 *
 * For tests, window.pyrospyReport tells what is drawn:
 *   boxes(part)  the boxes on the canvas: {name, file, line, x, y, w, h,
 *            depth, part, self, total, highlighted, family}, x and y in
 *            viewport pixels, line 0 when the box merges several lines of
 *            its function, part "callers" or "callees" in a sandwich,
 *            "base", "new" or "diff" when comparing (a diff box has base
 *            and next, its totals, change, in points of total share, and
 *            colour "red", "blue" or "grey"); only part's when given
 *   state()  {zoom, sandwich, crumbs, inverted, thread, threads, search,
 *            searchShare, searchSamples, samples, selected, sort, tags (the
 *            values chosen by key), tagValues (key: value: samples),
 *            compare (null, or {key, base, new, baseLabel, newLabel,
 *            baseSamples, newSamples}; base '' is all samples)}
 *   rows()   the table's rows as shown: {name, file, self, total}
 */
(function () {
	'use strict';

	var D = JSON.parse(document.getElementById('pyrospy-data').textContent);
	var S = D.strings, FR = D.frames, NF = D.frame, NS = D.self;
	var N = D.up.length, NFRAME = FR.length / 4, NP = new Int32Array(N);

	/* the nodes in preorder, each parent given as how far back it is */
	for (var up = 1; up < N; up++)
		NP[up] = up - D.up[up];
	var KIND_CODE = 0, KIND_TAGS = 1, KIND_THREAD = 2;
	var ROW = 18, MINW = 0.4;

	function fname(f) { return f < 0 ? 'all' : S[FR[4 * f]]; }
	function ffile(f) { return f < 0 ? '' : S[FR[4 * f + 1]]; }
	/* the file as the table shows it: its short form (D.short), else whole */
	var SHORT = new Map();
	for (var sh = 0; sh + 1 < (D.short || []).length; sh += 2)
		SHORT.set(D.short[sh], D.short[sh + 1]);
	function fshort(f) {
		var id = f < 0 ? -1 : FR[4 * f + 1];

		return id < 0 ? '' : S[SHORT.has(id) ? SHORT.get(id) : id];
	}
	function fline(f) { return f < 0 ? 0 : FR[4 * f + 2]; }
	function fkind(f) { return FR[4 * f + 3]; }

	/* a function: its name and file (lines apart are one function) */
	var fnOf = new Int32Array(NFRAME), fnName = [], fnFile = [], fnFull = [], nfunctions = 0;
	(function () {
		var ids = new Map();

		for (var f = 0; f < NFRAME; f++) {
			var key = fname(f) + '\u0000' + ffile(f), id = ids.get(key);

			if (id === undefined) {
				id = fnName.length;
				ids.set(key, id);
				fnName.push(fname(f));
				fnFile.push(fshort(f));
				fnFull.push(ffile(f));
				if (fkind(f) !== KIND_TAGS && fkind(f) !== KIND_THREAD)
					nfunctions++;
			}
			fnOf[f] = id;
		}
	})();

	/* the thread frame above each node (-1: none), and the threads */
	var thr = new Int32Array(N), threads = [];
	(function () {
		var seen = new Map();

		thr[0] = -1;
		for (var i = 1; i < N; i++) {
			var k = fkind(NF[i]);

			thr[i] = k === KIND_THREAD ? NF[i] : thr[NP[i]];
			if (thr[i] >= 0 && NS[i]) {
				var t = seen.get(thr[i]);

				if (t === undefined) {
					t = { frame: thr[i], name: fname(thr[i]), samples: 0 };
					seen.set(thr[i], t);
					threads.push(t);
				}
				t.samples += NS[i];
			}
		}
		threads.sort(function (a, b) { return b.samples - a.samples; });
	})();

	/*
	 * Tag sets ("k=v,k=v", keys sorted; values hold no ','): the one above
	 * each node (-1: none), and for each key its values and their samples.
	 * A chosen value per key filters: a stack passes when its tag set has
	 * every pair chosen (tagPass[frame]); one without tags, when none is.
	 */
	var tagOf = new Int32Array(N), tagKeys = new Map(), tagPass = new Uint8Array(NFRAME);
	var tagChosen = new Map();
	(function () {
		var total = Float64Array.from(NS), i;

		for (i = N - 1; i > 0; i--)
			total[NP[i]] += total[i];
		tagOf[0] = -1;
		for (i = 1; i < N; i++) {
			var f = NF[i];

			tagOf[i] = fkind(f) === KIND_TAGS ? f : tagOf[NP[i]];
			if (fkind(f) !== KIND_TAGS || !fname(f))
				continue;
			fname(f).split(',').forEach(function (kv) {
				var eq = kv.indexOf('='), k = kv.slice(0, eq), v = kv.slice(eq + 1);

				if (eq < 1)
					return;
				if (!tagKeys.has(k))
					tagKeys.set(k, new Map());
				var vals = tagKeys.get(k);

				vals.set(v, (vals.get(v) || 0) + total[i]);
			});
		}
	})();
	function tagFilter() {
		for (var f = 0; f < NFRAME; f++) {
			if (fkind(f) !== KIND_TAGS)
				continue;
			var pairs = fname(f).split(','), ok = 1;

			tagChosen.forEach(function (v, k) {
				if (pairs.indexOf(k + '=' + v) < 0)
					ok = 0;
			});
			tagPass[f] = ok;
		}
	}
	function tagOk(tf) {
		return tf < 0 ? tagChosen.size === 0 : tagPass[tf] === 1;
	}
	tagFilter();

	/*
	 * A tree as the page shows it: tags and threads merged (or one thread),
	 * the frames of one function (lines apart) under one caller merged too;
	 * line 0 when they had more than one.
	 */
	var NFN = fnName.length;

	/*
	 * In typed arrays, for profiles of a million nodes: a node's child of a
	 * function is found by an open-addressing hash of node ids (hash of
	 * parent and function, -1 empty); the children are laid out by
	 * finish(), widest first, kids[kid0[n] .. kid0[n + 1]).
	 */
	function Tree(cap) {
		var c = 16;

		while (c < cap)
			c *= 2;
		this.n = 1;
		this.alloc(c);
		this.frame[0] = -1;
	}
	Tree.prototype.alloc = function (cap) {
		var old = this;

		function grow(A, from) {
			var a = new A(cap);

			if (from)
				a.set(from.subarray(0, old.n));
			return a;
		}
		this.parent = grow(Int32Array, this.parent);
		this.frame = grow(Int32Array, this.frame);
		this.line = grow(Int32Array, this.line);
		this.self = grow(Float64Array, this.self);
		this.depth = grow(Int32Array, this.depth);
		this.cap = cap;
		this.hash = new Int32Array(2 * cap).fill(-1);
		this.mask = 2 * cap - 1;
		for (var c = 1; c < this.n; c++)
			this.hash[this.slot(this.parent[c], fnOf[this.frame[c]])] = c;
	};
	/* the slot of (p, fn): its node's, or the empty one where it goes */
	Tree.prototype.slot = function (p, fn) {
		var h = (Math.imul(p, 0x9e3779b1) ^ Math.imul(fn + 1, 0x85ebca77)) & this.mask, c;

		while ((c = this.hash[h]) >= 0 && (this.parent[c] !== p || fnOf[this.frame[c]] !== fn))
			h = (h + 1) & this.mask;
		return h;
	};
	Tree.prototype.child = function (p, f) {
		var h = this.slot(p, fnOf[f]), c = this.hash[h];

		if (c >= 0) {
			if (this.line[c] !== fline(f))
				this.line[c] = 0;
			return c;
		}
		if (this.n === this.cap) {	/* cap is a power of two: so is the hash */
			this.alloc(this.cap * 2);
			h = this.slot(p, fnOf[f]);
		}
		c = this.n++;
		this.hash[h] = c;
		this.parent[c] = p;
		this.frame[c] = f;
		this.line[c] = fline(f);
		this.depth[c] = this.depth[p] + 1;
		return c;
	};
	Tree.prototype.finish = function () {
		var n = this.n, total = this.self.slice(0, n), parent = this.parent, frame = this.frame;
		var kid0 = new Int32Array(n + 1), kids = new Int32Array(n), at, j;

		for (j = n - 1; j > 0; j--)
			total[parent[j]] += total[j];
		for (j = 1; j < n; j++)
			kid0[parent[j] + 1]++;
		for (j = 0; j < n; j++)
			kid0[j + 1] += kid0[j];
		at = kid0.slice(0, n);
		for (j = 1; j < n; j++)
			kids[at[parent[j]]++] = j;
		/* widest first, so that the first screen shows the most */
		for (j = 0; j < n; j++)
			if (kid0[j + 1] - kid0[j] > 1)
				kids.subarray(kid0[j], kid0[j + 1]).sort(function (a, b) {
					return total[b] - total[a] ||
						(fname(frame[a]) < fname(frame[b]) ? -1 : 1);
				});
		this.total = total;
		this.kid0 = kid0;
		this.kids = kids;
		this.hash = null;	/* no child is added after */
		return this;
	};

	/* callers at the top (inverted false) or the innermost functions (true) */
	function build(inverted, thread) {
		var t = new Tree(inverted ? N : N + 1), i, k;

		if (!inverted) {
			var vmap = new Int32Array(N);

			for (i = 1; i < N; i++) {
				var p = vmap[NP[i]], f = NF[i];

				k = fkind(f);
				if (p < 0 || !tagOk(tagOf[i]) ||
				    (thread >= 0 && k !== KIND_TAGS && thr[i] !== thread))
					vmap[i] = -1;
				else if (k === KIND_TAGS || k === KIND_THREAD)
					vmap[i] = p;
				else
					vmap[i] = t.child(p, f);
				if (vmap[i] >= 0)
					t.self[vmap[i]] += NS[i];
			}
			return t.finish();
		}
		var path = [];

		for (i = 1; i < N; i++) {
			if (!NS[i] || !tagOk(tagOf[i]) || (thread >= 0 && thr[i] !== thread))
				continue;
			path.length = 0;
			for (var j = i; j; j = NP[j]) {
				k = fkind(NF[j]);
				if (k !== KIND_TAGS && k !== KIND_THREAD)
					path.push(NF[j]);
			}
			var at = 0;

			for (var d = 0; d < path.length; d++)
				at = t.child(at, path[d]);
			t.self[at] += NS[i];
		}
		return t.finish();
	}

	var $ = function (id) { return document.getElementById(id); };
	var canvas = $('flame'), ctx = canvas.getContext('2d'), tip = $('tip');
	var st = {
		inverted: false, thread: -1, zoom: 0, search: '', match: null, share: 0,
		shareSamples: 0, selected: -1, sortKey: 'total', sortDesc: true, filter: '',
		sandwich: null, compare: null
	};
	var tree = build(false, -1), plain = tree, drawn = [], rows = [], tableRows = [];

	function pct(n, of) { return of ? (100 * n / of).toFixed(1) + '%' : '0.0%'; }

	function summary() {
		var m = D.meta, facts = $('facts');

		// a command line may be 4 KiB: the heading has its start, the tooltip all
		var title = m.title.length > 200 ? m.title.slice(0, 200) + '\u2026' : m.title;

		$('title').textContent = title;
		$('title').title = m.title;
		document.title = title + ' \u2014 pyrospy report';
		function fact(k, v) {
			var div = document.createElement('div'), dt = document.createElement('dt'),
				dd = document.createElement('dd');

			dt.textContent = k;
			dd.textContent = v;
			div.append(dt, dd);
			facts.append(div);
			return div;
		}
		function utc(t) {
			return new Date(t * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
		}
		// what pyrospy knew; a fact a recording did not keep is left out
		if (m.interp)
			fact('Interpreter', m.interp);
		if (m.pid)
			fact('Process', 'pid ' + m.pid);
		if (m.command)
			fact('Command', m.command).className = 'command';
		if (m.start > 0) {
			fact('Started', utc(m.start));
			fact('Ended', utc(m.start + m.duration));
		}
		fact('Duration', m.duration.toFixed(2) + ' s');
		if (m.rate)
			fact('Rate asked', m.rate + ' Hz');
		if (m.ticks !== undefined) {
			if (m.duration > 0)
				fact('Rate delivered', (m.ticks / m.duration).toFixed(1) + ' Hz');
			fact('Ticks', String(m.ticks));
			fact('Late ticks', String(m.late));
		}
		fact('Samples', String(m.samples));
		if (m.ticks !== undefined) {
			fact('Dropped', m.dropped ? m.dropped + ' (changed under every read)' : '0');
			if (m.tagsDropped)
				fact('Without their tags', m.tagsDropped + ' (the tags changed under the read)');
		}
		if (D.compare) {
			var cv = tagKeys.get(D.compare.key) || new Map();

			fact('BASE', D.compare.baseLabel + ' \u2014 ' + (cv.get(D.compare.base) || 0) + ' samples');
			fact('NEW', D.compare.newLabel + ' \u2014 ' + (cv.get(D.compare.new) || 0) + ' samples');
		}
		fact('Threads', m.threads ? String(threads.length) : 'merged (record with --threads to pick one)');
		fact('Functions', String(nfunctions));
		fact('pyrospy', m.version);
	}

	/*
	 * Families of code, by file: the program's own, the standard library
	 * (CPython's lib/pythonX.Y and frozen modules, Ruby's lib/ruby/X.Y.Z
	 * and <internal:...>), installed packages (site-packages,
	 * dist-packages, gems), native (Ruby's C methods), and the
	 * pseudo-frames: garbage collection, [truncated], [other].  Each has
	 * a hue; the function's name shades it.  Magenta is left to highlights.
	 */
	var FAMILIES = [
		{ id: 'app', label: 'app code', hue: 12, spread: 38, sat: 80, light: 66 },
		{ id: 'stdlib', label: 'standard library', hue: 195, spread: 30, sat: 60, light: 74 },
		{ id: 'packages', label: 'site-packages / gems', hue: 95, spread: 45, sat: 45, light: 68 },
		{ id: 'native', label: 'native (C)', hue: 28, spread: 12, sat: 28, light: 66 },
		{ id: 'gc', label: 'GC / pseudo-frames', hue: 0, spread: 0, sat: 0, light: 78 }
	];
	function family(f) {
		if (f < 0 || fkind(f) !== KIND_CODE)
			return 4;
		var file = ffile(f);

		if (file === '(cfunc)' || file.indexOf('<built-in') === 0)
			return 3;
		if (/\/(site|dist)-packages\/|\/gems\//.test(file))
			return 2;
		if (/^<frozen |^<internal:|\/lib\/python\d+\.\d+t?\/|\/lib\/ruby\/\d+\.\d+\.\d+\//.test(file))
			return 1;
		return 0;
	}
	var famOf = new Uint8Array(NFRAME);

	for (var ff = 0; ff < NFRAME; ff++)
		famOf[ff] = family(ff);

	function colour(f, hl) {
		if (hl)
			return '#e879f9';
		if (f < 0)
			return '#d9d9e0';
		var fam = FAMILIES[famOf[f]], s = fname(f), h = 0;

		for (var i = 0; i < s.length && i < 64; i++)
			h = (h * 31 + s.charCodeAt(i)) | 0;
		h = (h >>> 0) % 1000 / 1000;
		return 'hsl(' + (fam.hue + fam.spread * h).toFixed(0) + ',' +
			(fam.sat + (fam.sat ? 10 * h : 0)).toFixed(0) + '%,' +
			(fam.light + 8 * h).toFixed(0) + '%)';
	}

	/* the families of the frames shown, with their share of self samples */
	function legend() {
		var el = $('legend'), self = [0, 0, 0, 0, 0], seen = [0, 0, 0, 0, 0], all = plain.total[0];

		for (var j = 1; j < plain.n; j++) {
			self[famOf[plain.frame[j]]] += plain.self[j];
			seen[famOf[plain.frame[j]]] = 1;
		}
		el.textContent = '';
		FAMILIES.forEach(function (fam, i) {
			if (!seen[i])
				return;
			var item = document.createElement('span'), sw = document.createElement('i');

			sw.style.background = 'hsl(' + (fam.hue + fam.spread / 2) + ',' + fam.sat + '%,' +
				(fam.light + 4) + '%)';
			item.dataset.family = fam.id;
			item.append(sw, fam.label + ' ' + pct(self[i], all));
			item.title = 'self samples in ' + fam.label;
			el.append(item);
		});
	}

	function highlighted(f) {
		return f >= 0 && ((st.match && st.match[f] === 1) ||
				  (st.selected >= 0 && fnOf[f] === st.selected));
	}

	function chain(n) {
		var c = [n];

		while (n) {
			n = tree.parent[n];
			c.unshift(n);
		}
		return c;
	}

	/* the text that fits w pixels: all of s, or its start and an ellipsis */
	function fit(s, w) {
		if (w < 20)
			return '';
		if (ctx.measureText(s).width <= w)
			return s;
		var lo = 0, hi = Math.min(s.length, Math.ceil(w / 4));

		while (lo < hi) {
			var mid = (lo + hi + 1) >> 1;

			if (ctx.measureText(s.slice(0, mid) + '\u2026').width <= w)
				lo = mid;
			else
				hi = mid - 1;
		}
		return lo ? s.slice(0, lo) + '\u2026' : '';
	}

	/*
	 * The boxes of tree t from node z down, z at depth 0 (its ancestors
	 * above it when chain holds them), width pixels wide: {t, n, x, w, d}.
	 */
	function layout(t, z, chainOf, width, boxes) {
		var top = chainOf.length - 1, maxd = top;
		var total = t.total, scale = total[z] ? width / total[z] : 0;

		for (var d = 0; d < chainOf.length; d++)
			boxes.push({ t: t, n: chainOf[d], x: 0, w: width, d: d });
		var stack = [[z, 0, top]];

		while (stack.length) {
			var e = stack.pop(), x = e[1];

			for (var i = t.kid0[e[0]], end = t.kid0[e[0] + 1]; i < end; i++) {
				var k = t.kids[i], w = total[k] * scale;

				if (w >= MINW) {
					boxes.push({ t: t, n: k, x: x, w: w, d: e[2] + 1 });
					if (e[2] + 1 > maxd)
						maxd = e[2] + 1;
					stack.push([k, x, e[2] + 1]);
				}
				x += w;
			}
		}
		return maxd;
	}

	function draw() {
		var width = canvas.parentNode.clientWidth, dpr = window.devicePixelRatio || 1;
		var boxes = [], nrows, b, bx, c = chain(st.zoom), heads = [];

		if (st.compare) {
			nrows = layoutCompare(width, boxes, heads);
		} else if (st.sandwich) {
			/* the callers upwards from the function, its callees below it */
			var up = layout(st.sandwich.callers, 0, [0], width, boxes), split = boxes.length;
			var down = layout(st.sandwich.callees, 0, [0], width, boxes);

			for (b = 0; b < boxes.length; b++) {
				boxes[b].row = b < split ? up - boxes[b].d : up + 1 + boxes[b].d;
				boxes[b].part = b < split ? 'callers' : 'callees';
			}
			nrows = up + down + 2;
		} else {
			nrows = layout(tree, st.zoom, c, width, boxes) + 1;
			for (b = 0; b < boxes.length; b++) {
				boxes[b].row = boxes[b].d;
				boxes[b].part = '';
			}
		}
		var height = nrows * ROW;

		canvas.width = Math.round(width * dpr);
		canvas.height = Math.round(height * dpr);
		canvas.style.height = height + 'px';
		ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
		ctx.font = '12px system-ui, -apple-system, "Segoe UI", sans-serif';
		ctx.textBaseline = 'middle';
		rows = [];
		for (b = 0; b < boxes.length; b++) {
			bx = boxes[b];
			var f = bx.t.frame[bx.n], hl = highlighted(f);

			bx.hl = hl;
			ctx.fillStyle = bx.part === 'diff' && !hl ? diffColour(bx.t, bx.n) : colour(f, hl);
			ctx.fillRect(bx.x, bx.row * ROW, Math.max(bx.w - 1, 0.4), ROW - 1);
			if (bx.w >= 20) {
				var label = f < 0 ? 'all (' + (bx.part === 'diff' ? bx.t.nt[0] : bx.t.total[0]) +
					' samples)' : fname(f);

				ctx.fillStyle = bx.part === 'diff' && !hl && diffDeep(bx.t, bx.n) ? '#fff' : '#1d1d1f';
				ctx.fillText(fit(label, bx.w - 6), bx.x + 3, bx.row * ROW + ROW / 2);
			}
			(rows[bx.row] || (rows[bx.row] = [])).push(bx);
		}
		ctx.font = 'bold 12px system-ui, -apple-system, "Segoe UI", sans-serif';
		ctx.fillStyle = '#1d1d1f';
		heads.forEach(function (h) { ctx.fillText(fit(h.text, h.w - 6), h.x + 3, h.row * ROW + ROW / 2); });
		for (var r = 0; r < rows.length; r++)
			if (rows[r])
				rows[r].sort(function (p, q) { return p.x - q.x; });
		drawn = boxes;
		crumbs(c);
	}

	/*
	 * Comparing two values of a tag key: BASE's flame graph on the left
	 * half, NEW's on the right, each of its own samples, a title row
	 * above each; under them the diff, as pyrospy diff draws it in SVG:
	 * widths are NEW's samples, with the frames only in BASE added at
	 * BASE's share; colours say how each frame's total share changed,
	 * red grew, blue shrank, the deeper the larger against the largest
	 * change (5 points at least, so that noise stays pale).  Returns the
	 * rows; heads gets the titles {text, x, w, row}.
	 */
	var GAP = 16;

	function layoutCompare(width, boxes, heads) {
		var cmp = st.compare, half = Math.max((width - GAP) / 2, 1), b, start;
		var hb = layout(cmp.bt, 0, [0], half, boxes), split = boxes.length;
		var hn = layout(cmp.nt, 0, [0], half, boxes), below = Math.max(hb, hn) + 4;

		for (b = 0; b < boxes.length; b++) {
			boxes[b].part = b < split ? 'base' : 'new';
			boxes[b].row = boxes[b].d + 1;
			if (b >= split)
				boxes[b].x += half + GAP;
		}
		heads.push({ text: 'BASE: ' + cmp.baseLabel + ' \u2014 ' + cmp.bt.total[0] + ' samples',
			     x: 0, w: half, row: 0 },
			   { text: 'NEW: ' + cmp.newLabel + ' \u2014 ' + cmp.nt.total[0] + ' samples',
			     x: half + GAP, w: half, row: 0 },
			   { text: 'diff: widths NEW\u2019s samples, colour the change of each frame\u2019s ' +
				   'total share, red grew, blue shrank (\u00b1' + cmp.dt.scale.toFixed(1) +
				   ' points the deepest)', x: 0, w: width, row: below - 1 });
		start = boxes.length;
		var hd = layout(cmp.dt, 0, [0], width, boxes);

		for (b = start; b < boxes.length; b++) {
			boxes[b].part = 'diff';
			boxes[b].row = boxes[b].d + below;
		}
		return below + hd + 1;
	}

	/* tree of the samples of value (all: '') of key, the other keys' filters kept */
	function buildValue(key, value) {
		var had = tagChosen.get(key), t;

		if (value === '')
			tagChosen.delete(key);
		else
			tagChosen.set(key, value);
		tagFilter();
		t = build(false, st.thread);
		if (had === undefined)
			tagChosen.delete(key);
		else
			tagChosen.set(key, had);
		tagFilter();
		return t;
	}

	/*
	 * The union of trees b and n by function under the same callers: its
	 * self holds the widths (NEW's samples, a frame only in BASE its
	 * BASE samples scaled to NEW's total), bt[] and nt[] each side's
	 * total, change[] the change of share in points.
	 */
	function diffTree(b, n) {
		var d = new Tree(b.n + n.n), mn = new Int32Array(n.n), mb = new Int32Array(b.n), j, p;

		for (j = 1; j < n.n; j++)
			mn[j] = d.child(mn[n.parent[j]], n.frame[j]);
		for (j = 1; j < b.n; j++)
			mb[j] = d.child(mb[b.parent[j]], b.frame[j]);
		var m = d.n, bt = new Float64Array(m), nt = new Float64Array(m), bs = new Float64Array(m);

		for (j = 1; j < n.n; j++)
			nt[mn[j]] += n.self[j];
		for (j = 1; j < b.n; j++)
			bs[mb[j]] += b.self[j];
		bt.set(bs);
		for (j = m - 1; j > 0; j--) {
			nt[d.parent[j]] += nt[j];
			bt[d.parent[j]] += bt[j];
		}
		var BT = bt[0] || 1, NT = nt[0] || 1, scale = NT / BT, change = new Float64Array(m), big = 5;

		d.self.fill(0);
		for (j = 1; j < n.n; j++)
			d.self[mn[j]] += n.self[j];
		for (j = 1; j < m; j++) {
			if (!nt[j])
				d.self[j] = bs[j] * scale;
			change[j] = 100 * (nt[j] / NT - bt[j] / BT);
			if (Math.abs(change[j]) > big)
				big = Math.abs(change[j]);
		}
		d.finish();
		d.bt = bt;
		d.nt = nt;
		d.change = change;
		d.scale = big;
		return d;
	}

	function diffDeep(t, n) {
		return Math.abs(t.change[n]) > 0.6 * t.scale;
	}
	function diffColour(t, n) {
		var ch = t.change[n], c = Math.round(235 - 185 * Math.min(1, Math.abs(ch) / t.scale));

		return ch > 0 ? 'rgb(255,' + c + ',' + c + ')' : ch < 0 ? 'rgb(' + c + ',' + c + ',255)' :
			'rgb(235,235,235)';
	}

	/*
	 * The sandwich of function fn (of the table's tree): its callees, the
	 * subtrees under its outermost calls merged (a recursive call stays
	 * in them), and its callers, each outermost call's path upwards with
	 * its samples.  Each tree's root is fn.
	 */
	function sandwich(fn) {
		var t = plain, callees = new Tree(64), callers = new Tree(64), map = new Int32Array(t.n);
		var j, a, cur;

		map.fill(-1);
		for (j = 1; j < t.n; j++) {
			var f = t.frame[j], p = map[t.parent[j]];

			if (p >= 0)
				map[j] = callees.child(p, f);
			else if (fnOf[f] === fn) {
				map[j] = 0;
				callees.frame[0] = callers.frame[0] = f;
				for (cur = 0, a = t.parent[j]; a; a = t.parent[a])
					cur = callers.child(cur, t.frame[a]);
				callers.self[cur] += t.total[j];
			} else
				continue;
			callees.self[map[j]] += t.self[j];
		}
		return { fn: fn, callers: callers.finish(), callees: callees.finish() };
	}

	function crumbs(c) {
		var nav = $('crumbs');

		nav.textContent = '';
		if (st.compare) {
			var done = document.createElement('button'), cmp = document.createElement('span');

			done.type = 'button';
			done.textContent = '\u00d7 leave comparison';
			done.title = 'back to one flame graph (Escape)';
			done.addEventListener('click', function () { setCompare(null); });
			cmp.textContent = 'comparing ' + st.compare.key + ': BASE ' + st.compare.baseLabel +
				' (left) with NEW ' + st.compare.newLabel + ' (right); zoom, the inverted view ' +
				'and the sandwich are off, the table shows NEW';
			nav.append(done, cmp);
			return;
		}
		if (st.sandwich) {
			var out = document.createElement('button'), what = document.createElement('span');

			out.type = 'button';
			out.textContent = '\u2190 flame graph';
			out.addEventListener('click', function () { setSandwich(-1); });
			what.textContent = 'callers of ' + fnName[st.sandwich.fn] + ' above it, callees below';
			nav.append(out, what);
			return;
		}
		c.forEach(function (n, i) {
			if (i) {
				var sep = document.createElement('span');

				sep.textContent = '\u203a';
				nav.append(sep);
			}
			var b = document.createElement('button');

			b.type = 'button';
			b.textContent = fname(tree.frame[n]);
			b.title = fname(tree.frame[n]);
			b.addEventListener('click', function () { zoom(n); });
			nav.append(b);
		});
	}

	function zoom(n) {
		st.zoom = n;
		draw();
	}

	function boxAt(ev) {
		var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
		var row = rows[Math.floor(y / ROW)];

		if (!row || y < 0)
			return null;
		var lo = 0, hi = row.length - 1;

		while (lo <= hi) {
			var mid = (lo + hi) >> 1, b = row[mid];

			if (x < b.x)
				hi = mid - 1;
			else if (x >= b.x + b.w)
				lo = mid + 1;
			else
				return b;
		}
		return null;
	}

	canvas.addEventListener('mousemove', function (ev) {
		var b = boxAt(ev);

		if (!b) {
			tip.hidden = true;
			return;
		}
		var t = b.t, f = t.frame[b.n], file = ffile(f), line = t.line[b.n], all = plain.total[0];

		if (b.part === 'base' || b.part === 'new')
			all = t.total[0];
		$('tip-name').textContent = (f < 0 ? 'all samples' : fname(f)) +
			(b.part === 'base' ? ' (BASE)' : b.part === 'new' ? ' (NEW)' : '');
		$('tip-file').textContent = file ? file + (line > 0 ? ':' + line : '') : '';
		if (b.part === 'diff')
			$('tip-count').textContent = 'total: BASE ' + t.bt[b.n] + ' (' + pct(t.bt[b.n], t.bt[0]) +
				') \u00b7 NEW ' + t.nt[b.n] + ' (' + pct(t.nt[b.n], t.nt[0]) + ') \u00b7 change ' +
				(t.change[b.n] >= 0 ? '+' : '') + t.change[b.n].toFixed(2) + ' points';
		else
			$('tip-count').textContent = 'self ' + t.self[b.n] + ' (' + pct(t.self[b.n], all) +
				') \u00b7 total ' + t.total[b.n] + ' (' + pct(t.total[b.n], all) + ')';
		tip.hidden = false;
		var x = ev.clientX + 14, y = ev.clientY + 14;

		if (x + tip.offsetWidth > window.innerWidth - 4)
			x = Math.max(4, ev.clientX - tip.offsetWidth - 10);
		if (y + tip.offsetHeight > window.innerHeight - 4)
			y = Math.max(4, ev.clientY - tip.offsetHeight - 10);
		tip.style.left = x + 'px';
		tip.style.top = y + 'px';
	});
	canvas.addEventListener('mouseleave', function () { tip.hidden = true; });
	canvas.addEventListener('click', function (ev) {
		var b = boxAt(ev);

		if (st.compare)
			return;
		if (b && st.sandwich)
			setSandwich(fnOf[b.t.frame[b.n]]);
		else if (b)
			zoom(b.n);
	});

	/* the sandwich of function fn, or (-1) the flame graph again */
	function setSandwich(fn) {
		st.sandwich = fn >= 0 ? sandwich(fn) : null;
		$('sandwich').setAttribute('aria-pressed', st.sandwich ? 'true' : 'false');
		tip.hidden = true;
		draw();
	}
	$('sandwich').addEventListener('click', function () {
		setSandwich(st.sandwich || st.selected < 0 ? -1 : st.selected);
	});

	/* search: a substring of the name, or /regex/flags */
	function search() {
		var q = $('search').value, out = $('search-share'), re = null, m;

		st.search = q;
		st.match = null;
		st.share = 0;
		st.shareSamples = 0;
		out.classList.remove('bad');
		out.textContent = '';
		if (q) {
			if ((m = /^\/(.+)\/([imsu]*)$/.exec(q))) {
				try {
					re = new RegExp(m[1], m[2]);
				} catch (e) {
					out.textContent = 'invalid regular expression';
					out.classList.add('bad');
				}
			}
			if (re || !m) {
				st.match = new Uint8Array(NFRAME);
				for (var f = 0; f < NFRAME; f++) {
					var k = fkind(f);

					if (k !== KIND_TAGS && k !== KIND_THREAD &&
					    (re ? re.test(fname(f)) : fname(f).indexOf(q) >= 0))
						st.match[f] = 1;
				}
				matched();
			}
		}
		draw();
	}

	/* samples under a matching frame, nested matches counted once */
	function matched() {
		var n = tree.n, under = new Uint8Array(n), sum = 0;

		for (var j = 1; j < n; j++) {
			var hit = st.match[tree.frame[j]] === 1;

			if (hit && !under[tree.parent[j]])
				sum += tree.total[j];
			under[j] = under[tree.parent[j]] || hit;
		}
		st.shareSamples = sum;
		st.share = tree.total[0] ? sum / tree.total[0] : 0;
		$('search-share').textContent = 'matched ' + pct(sum, tree.total[0]) + ' of samples (' +
			sum + ' of ' + tree.total[0] + ')';
	}

	/* the table of functions: self, and total counted once per stack */
	function table() {
		var t = plain, n = t.n, self = new Float64Array(fnName.length),
			tot = new Float64Array(fnName.length), used = new Uint8Array(fnName.length);

		for (var j = 1; j < n; j++) {
			var fn = fnOf[t.frame[j]], p = t.parent[j], again = false;

			for (; p; p = t.parent[p])
				if (fnOf[t.frame[p]] === fn) {
					again = true;
					break;
				}
			self[fn] += t.self[j];
			if (!again)
				tot[fn] += t.total[j];
			used[fn] = 1;
		}
		tableRows = [];
		for (var i = 0; i < fnName.length; i++)
			if (used[i])
				tableRows.push({ fn: i, name: fnName[i], file: fnFile[i], full: fnFull[i],
						 self: self[i], total: tot[i] });
		renderTable();
	}

	function renderTable() {
		var key = st.sortKey, dir = st.sortDesc ? -1 : 1, q = st.filter.toLowerCase();
		var list = tableRows.filter(function (r) {
			return !q || r.name.toLowerCase().indexOf(q) >= 0 || r.file.toLowerCase().indexOf(q) >= 0;
		});

		list.sort(function (a, b) {
			var x = a[key], y = b[key];

			if (x < y)
				return -dir;
			if (x > y)
				return dir;
			return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
		});
		var body = $('table').tBodies[0], all = plain.total[0], shown = list.slice(0, 500);

		body.textContent = '';
		shown.forEach(function (r) {
			var tr = document.createElement('tr'), name = document.createElement('td');
			var small = document.createElement('small');

			name.textContent = r.name;
			small.textContent = r.file;
			name.append(small);
			name.title = r.name + (r.full ? '\n' + r.full : '');
			tr.append(name, num(r.self, all), num(r.total, all));
			tr.dataset.fn = r.fn;
			if (r.fn === st.selected)
				tr.className = 'selected';
			tr.addEventListener('click', function () {
				st.selected = st.selected === r.fn ? -1 : r.fn;
				renderTable();
				draw();
			});
			body.append(tr);
		});
		$('table-more').textContent = list.length > shown.length ?
			(list.length - shown.length) + ' more: filter to see them' : '';
		rows_shown = shown;
		Array.prototype.forEach.call(document.querySelectorAll('#table th'), function (th) {
			if (th.dataset.key === key)
				th.setAttribute('aria-sort', st.sortDesc ? 'descending' : 'ascending');
			else
				th.removeAttribute('aria-sort');
		});
	}
	var rows_shown = [];

	function num(v, all) {
		var td = document.createElement('td');

		td.className = 'num';
		td.textContent = v + ' ' + pct(v, all);
		return td;
	}

	Array.prototype.forEach.call(document.querySelectorAll('#table th'), function (th) {
		th.addEventListener('click', function () {
			var key = th.dataset.key;

			if (st.sortKey === key)
				st.sortDesc = !st.sortDesc;
			else {
				st.sortKey = key;
				st.sortDesc = key !== 'name';
			}
			renderTable();
		});
	});
	$('filter').addEventListener('input', function () {
		st.filter = this.value;
		renderTable();
	});
	$('search').addEventListener('input', search);

	function rebuild() {
		var cmp = st.compare;

		if (cmp) {
			cmp.bt = buildValue(cmp.key, cmp.base);
			cmp.nt = buildValue(cmp.key, cmp.next);
			cmp.dt = diffTree(cmp.bt, cmp.nt);
			plain = tree = cmp.nt;
		} else {
			plain = build(false, st.thread);
			tree = st.inverted ? build(true, st.thread) : plain;
		}
		st.zoom = 0;
		if (st.sandwich)
			st.sandwich = sandwich(st.sandwich.fn);
		table();
		legend();
		if (st.match)
			matched();
		draw();
	}
	$('inverted').addEventListener('change', function () {
		st.inverted = this.checked;
		rebuild();
	});
	if (threads.length) {
		var sel = $('thread'), o = document.createElement('option');

		o.value = '-1';
		o.textContent = 'all threads (' + threads.length + ')';
		sel.append(o);
		threads.forEach(function (t) {
			var opt = document.createElement('option');

			opt.value = String(t.frame);
			opt.textContent = t.name + ' \u2014 ' + t.samples + ' samples';
			sel.append(opt);
		});
		sel.addEventListener('change', function () {
			st.thread = Number(this.value);
			rebuild();
		});
		$('thread-pick').hidden = false;
	}

	/* a picker per tag key: all its samples, or one value's */
	tagKeys.forEach(function (vals, key) {
		var label = document.createElement('label'), sel = document.createElement('select');
		var all = document.createElement('option'), list = Array.from(vals);

		var vs = document.createElement('select'), none = document.createElement('option');

		list.sort(function (a, b) { return b[1] - a[1] || (a[0] < b[0] ? -1 : 1); });
		label.append(key + ' ', sel, ' vs ', vs);
		sel.dataset.key = key;
		sel.title = 'show only the samples of this value of ' + key + ' (BASE when comparing)';
		vs.dataset.compare = key;
		vs.title = 'compare with: the value on the left (BASE) and this one (NEW) as two flame ' +
			'graphs side by side and their diff (red grew, blue shrank); \u2014 or Escape leaves';
		all.value = '';
		all.textContent = 'all';
		sel.append(all);
		none.value = '';
		none.textContent = '\u2014';
		vs.append(none);
		list.forEach(function (kv) {
			var o = document.createElement('option');

			o.value = kv[0];
			o.textContent = kv[0] + ' \u2014 ' + pct(kv[1], D.meta.samples);
			sel.append(o);
			vs.append(o.cloneNode(true));
		});
		sel.addEventListener('change', function () {
			if (this.selectedIndex > 0)
				tagChosen.set(key, this.value);
			else
				tagChosen.delete(key);
			tagFilter();
			if (st.compare && st.compare.key === key)
				setCompare({ key: key, base: this.value, next: st.compare.next });
			else
				rebuild();
		});
		vs.addEventListener('change', function () {
			setCompare(this.selectedIndex > 0 ? { key: key, base: sel.value, next: this.value } : null);
		});
		$('tags').append(label);
		$('tags').hidden = false;
	});

	/*
	 * Compare c.base (BASE, '' for all of the key's samples) with c.next
	 * (NEW) of tag key c.key, or (null) show one flame graph again.  The
	 * labels are "key=value", or those pyrospy diff gave (D.compare).
	 */
	function setCompare(c) {
		var dc = D.compare && c && D.compare.key === c.key ? D.compare : null;

		function label(v) {
			if (dc && v === dc.base)
				return dc.baseLabel;
			if (dc && v === dc.new)
				return dc.newLabel;
			return v === '' ? 'all samples' : c.key + '=' + v;
		}
		Array.prototype.forEach.call(document.querySelectorAll('#tags select[data-compare]'), function (vs) {
			vs.value = c && vs.dataset.compare === c.key ? c.next : '';
		});
		if (c) {
			c.baseLabel = label(c.base);
			c.newLabel = label(c.next);
			st.sandwich = null;
			st.inverted = false;
			$('inverted').checked = false;
		}
		st.compare = c;
		$('inverted').disabled = $('sandwich').disabled = !!c;
		$('sandwich').setAttribute('aria-pressed', 'false');
		tip.hidden = true;
		rebuild();
	}

	document.addEventListener('keydown', function (ev) {
		var inField = ev.target && (ev.target.tagName === 'INPUT' || ev.target.tagName === 'SELECT');

		if ((ev.ctrlKey || ev.metaKey) && ev.key === 'f' || (ev.key === '/' && !inField)) {
			ev.preventDefault();
			$('search').focus();
			$('search').select();
		} else if (ev.key === 'Escape') {
			if (inField)
				ev.target.blur();
			if (st.compare)
				setCompare(null);
			else if (st.sandwich)
				setSandwich(-1);
			else
				zoom(0);
		}
	});
	var resizing = 0;

	window.addEventListener('resize', function () {
		cancelAnimationFrame(resizing);
		resizing = requestAnimationFrame(draw);
	});

	window.pyrospyReport = Object.freeze({
		boxes: function (part) {
			var r = canvas.getBoundingClientRect();

			return drawn.filter(function (b) {
				return part === undefined || b.part === part;
			}).map(function (b) {
				var f = b.t.frame[b.n], o = {
					name: fname(f), file: ffile(f), line: b.t.line[b.n], x: r.left + b.x,
					y: r.top + b.row * ROW, w: b.w, h: ROW - 1, depth: b.d, part: b.part,
					self: b.t.self[b.n], total: b.t.total[b.n], highlighted: b.hl,
					family: f < 0 ? '' : FAMILIES[famOf[f]].id
				};

				if (b.part === 'diff') {
					o.base = b.t.bt[b.n];
					o.next = b.t.nt[b.n];
					o.change = b.t.change[b.n];
					o.colour = o.change > 0 ? 'red' : o.change < 0 ? 'blue' : 'grey';
				}
				return o;
			});
		},
		state: function () {
			return {
				zoom: fname(tree.frame[st.zoom]),
				sandwich: st.sandwich ? fnName[st.sandwich.fn] : null,
				crumbs: chain(st.zoom).map(function (n) { return fname(tree.frame[n]); }),
				inverted: st.inverted,
				thread: st.thread >= 0 ? fname(st.thread) : null,
				threads: threads.map(function (t) { return { name: t.name, samples: t.samples }; }),
				search: st.search, searchShare: st.share, searchSamples: st.shareSamples,
				samples: tree.total[0],
				selected: st.selected >= 0 ? fnName[st.selected] : null,
				sort: { key: st.sortKey, descending: st.sortDesc },
				tags: Object.fromEntries(tagChosen),
				compare: st.compare ? {
					key: st.compare.key, base: st.compare.base, new: st.compare.next,
					baseLabel: st.compare.baseLabel, newLabel: st.compare.newLabel,
					baseSamples: st.compare.bt.total[0], newSamples: st.compare.nt.total[0]
				} : null,
				tagValues: Object.fromEntries(Array.from(tagKeys, function (kv) {
					return [kv[0], Object.fromEntries(kv[1])];
				}))
			};
		},
		rows: function () {
			return rows_shown.map(function (r) {
				return { name: r.name, file: r.file, self: r.self, total: r.total };
			});
		}
	});

	summary();
	/* pyrospy diff -f html: BASE and NEW are two values of its key */
	if (D.compare && tagKeys.has(D.compare.key)) {
		Array.from(document.querySelectorAll('#tags select[data-key]')).find(function (s) {
			return s.dataset.key === D.compare.key;
		}).value = D.compare.base;
		tagChosen.set(D.compare.key, D.compare.base);
		tagFilter();
		setCompare({ key: D.compare.key, base: D.compare.base, next: D.compare.new });
	} else {
		table();
		legend();
		draw();
	}
	/* the time to the first graph drawn, for scripts/bench */
	performance.mark('pyrospy-drawn');
})();
