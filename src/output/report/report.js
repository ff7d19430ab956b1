/*
 * pyrospy's html report (src/output/out_html.c writes the data): a flame
 * graph drawn root at the top on a canvas, a table of functions, search,
 * an inverted view and a thread picker.  No framework, no network.  Every
 * name comes from the profiled program: it reaches the page only as text
 * (textContent, fillText), never as markup.
 *
 * For tests, window.pyrospyReport tells what is drawn:
 *   boxes()  the boxes on the canvas: {name, file, line, x, y, w, h, depth,
 *            part, self, total, highlighted, family}, x and y in viewport
 *            pixels, line 0 when the box merges several lines of its
 *            function, part "callers" or "callees" in a sandwich
 *   state()  {zoom, sandwich, crumbs, inverted, thread, threads, search,
 *            searchShare, searchSamples, samples, selected, sort, tags (the
 *            values chosen by key), tagValues (key: value: samples)}
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
		sandwich: null
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
		var boxes = [], nrows, b, bx, c = chain(st.zoom);

		if (st.sandwich) {
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
			ctx.fillStyle = colour(f, hl);
			ctx.fillRect(bx.x, bx.row * ROW, Math.max(bx.w - 1, 0.4), ROW - 1);
			if (bx.w >= 20) {
				var label = f < 0 ? 'all (' + bx.t.total[0] + ' samples)' : fname(f);

				ctx.fillStyle = '#1d1d1f';
				ctx.fillText(fit(label, bx.w - 6), bx.x + 3, bx.row * ROW + ROW / 2);
			}
			(rows[bx.row] || (rows[bx.row] = [])).push(bx);
		}
		for (var r = 0; r < rows.length; r++)
			if (rows[r])
				rows[r].sort(function (p, q) { return p.x - q.x; });
		drawn = boxes;
		crumbs(c);
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

		$('tip-name').textContent = f < 0 ? 'all samples' : fname(f);
		$('tip-file').textContent = file ? file + (line > 0 ? ':' + line : '') : '';
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
		plain = build(false, st.thread);
		tree = st.inverted ? build(true, st.thread) : plain;
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

		list.sort(function (a, b) { return b[1] - a[1] || (a[0] < b[0] ? -1 : 1); });
		label.append(key + ' ', sel);
		sel.dataset.key = key;
		all.value = '';
		all.textContent = 'all';
		sel.append(all);
		list.forEach(function (kv) {
			var o = document.createElement('option');

			o.value = kv[0];
			o.textContent = kv[0] + ' \u2014 ' + pct(kv[1], D.meta.samples);
			sel.append(o);
		});
		sel.addEventListener('change', function () {
			if (this.selectedIndex > 0)
				tagChosen.set(key, this.value);
			else
				tagChosen.delete(key);
			tagFilter();
			rebuild();
		});
		$('tags').append(label);
		$('tags').hidden = false;
	});

	document.addEventListener('keydown', function (ev) {
		var inField = ev.target && (ev.target.tagName === 'INPUT' || ev.target.tagName === 'SELECT');

		if ((ev.ctrlKey || ev.metaKey) && ev.key === 'f' || (ev.key === '/' && !inField)) {
			ev.preventDefault();
			$('search').focus();
			$('search').select();
		} else if (ev.key === 'Escape') {
			if (inField)
				ev.target.blur();
			if (st.sandwich)
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
		boxes: function () {
			var r = canvas.getBoundingClientRect();

			return drawn.map(function (b) {
				var f = b.t.frame[b.n];

				return {
					name: fname(f), file: ffile(f), line: b.t.line[b.n], x: r.left + b.x,
					y: r.top + b.row * ROW, w: b.w, h: ROW - 1, depth: b.d, part: b.part,
					self: b.t.self[b.n], total: b.t.total[b.n], highlighted: b.hl,
					family: f < 0 ? '' : FAMILIES[famOf[f]].id
				};
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
	table();
	legend();
	draw();
	/* the time to the first graph drawn, for scripts/bench */
	performance.mark('pyrospy-drawn');
})();
