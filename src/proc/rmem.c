/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>

#include "proc/rmem.h"
#include "proc/target.h"
#include "util/xalloc.h"

void rmem_init(struct rmem *m, struct target *t)
{
	memset(m, 0, sizeof(*m));
	m->t = t;
}

void rmem_release(struct rmem *m)
{
	for (int i = 0; i < RMEM_WINDOWS; i++)
		free(m->win[i].buf);
	free(m->big.buf);
	memset(m, 0, sizeof(*m));
}

void rmem_reset(struct rmem *m)
{
	for (int i = 0; i < RMEM_WINDOWS; i++)
		m->win[i].len = m->win[i].used = 0;
	m->big.len = m->big.used = 0;
	m->maps_refreshed = 0;
}

#define FETCH_FRESH	1u	/* read the regions again even when a window holds them */
#define FETCH_EXACT	2u	/* the regions as they are, not the pages around them */

static enum perr fetch(struct rmem *m, uint64_t big, size_t biglen, const uint64_t *addr,
		       const size_t *len, unsigned int n, unsigned int how, unsigned char *pre);

void rmem_begin(struct rmem *m, int replay)
{
	unsigned int n = 0, used = 0;
	/* a big window the reader fills itself (rmem_big_prepare) is its own */
	int big = m->big.len > 0 && m->big.used && m->big_want;

	/*
	 * The big window first, as fetch() takes it, with room to grow (a
	 * stack one call deeper) as far as its map goes.
	 */
	if (big) {
		const struct procmap *map = procmaps_find(&m->t->maps, m->big.addr);
		size_t want = m->big_want <= m->big.len ? m->big_want : m->big.len;
		uint64_t end = m->big.addr + want + RMEM_BIG_SLACK;

		if (map && end > map->end)
			end = map->end;
		if (end < m->big.addr + want)
			end = m->big.addr + want;
		m->last_addr[n] = m->big.addr;
		m->last_len[n++] = (size_t)(end - m->big.addr);
	}
	/*
	 * Of the other windows, only those the last sample read from, and,
	 * when they were few, only what it read of them with a margin: the
	 * same structures at the same offsets are read again, and copying
	 * whole pages of the target costs.  Many windows mean objects
	 * scattered over the heap (frame objects, <= 3.10), where what lies
	 * next to one is read next: those windows stay whole.
	 */
	for (int i = 0; i < RMEM_WINDOWS; i++)
		used += m->win[i].len && m->win[i].used;
	for (int i = 0; i < RMEM_WINDOWS; i++) {
		const struct rmem_win *w = &m->win[i];
		uint64_t lo, hi;

		if (!w->len || !w->used)
			continue;
		if (used > RMEM_WINDOWS / 4) {
			m->last_addr[n] = w->addr;
			m->last_len[n++] = w->len;
			continue;
		}
		lo = w->lo - w->addr > RMEM_MARGIN ? (w->lo - RMEM_MARGIN) & ~63ull : w->addr;
		hi = w->addr + w->len - w->hi > RMEM_MARGIN ? (w->hi + RMEM_MARGIN + 63) & ~63ull
							     : w->addr + w->len;
		if (lo < w->addr)
			lo = w->addr;
		if (hi > w->addr + w->len)
			hi = w->addr + w->len;
		m->last_addr[n] = lo;
		m->last_len[n++] = (size_t)(hi - lo);
	}
	m->nlast = n;
	rmem_reset(m);
	if (!replay || !n)
		return;
	if (big)
		fetch(m, m->last_addr[0], m->last_len[0], m->last_addr + 1, m->last_len + 1, n - 1,
		      FETCH_EXACT, NULL);
	else
		fetch(m, 0, 0, m->last_addr, m->last_len, n, FETCH_EXACT, NULL);
}

int rmem_mapped(struct rmem *m, uint64_t addr, uint64_t len)
{
	if (procmaps_readable(&m->t->maps, addr, len))
		return 1;
	/* The target may have mapped memory since: look again, once a sample. */
	if (m->maps_refreshed || target_refresh_maps(m->t))
		return 0;
	m->maps_refreshed = 1;
	return procmaps_readable(&m->t->maps, addr, len);
}

static int win_has(const struct rmem_win *w, uint64_t addr, size_t len)
{
	return w->len && addr >= w->addr && addr - w->addr <= w->len &&
	       len <= w->len - (addr - w->addr);
}

/* Copy out of a window that holds [addr, addr+len), and note the use. */
static void win_take(struct rmem_win *w, uint64_t addr, void *out, size_t len)
{
	memcpy(out, w->buf + (addr - w->addr), len);
	if (!w->used) {
		w->used = 1;
		w->lo = addr;
		w->hi = addr + len;
		return;
	}
	if (addr < w->lo)
		w->lo = addr;
	if (addr + len > w->hi)
		w->hi = addr + len;
}

/* Does the big window, read this sample, hold [addr, addr+len)? */
static int big_has(const struct rmem *m, uint64_t addr, size_t len)
{
	return win_has(&m->big, addr, len);
}

static void win_fit(struct rmem_win *w, size_t len)
{
	if (w->cap < len) {
		w->cap = len;
		w->buf = xrealloc(w->buf, len);
	}
}

/*
 * The window to fetch for [addr, addr+len), which is readable: the two
 * pages around addr, clipped to the readable maps that hold it.
 */
static void win_span(struct rmem *m, uint64_t addr, size_t len, uint64_t *startp, uint64_t *endp)
{
	const struct procmap *map = procmaps_find(&m->t->maps, addr);
	uint64_t start = addr & ~(uint64_t)(RMEM_PAGE - 1), end;

	if (start < map->start)
		start = map->start;
	end = start + 2 * RMEM_PAGE;
	if (end < addr + len)
		end = addr + len;
	while (end > start && !procmaps_readable(&m->t->maps, start, end - start))
		end -= RMEM_PAGE;
	if (end < addr + len)
		end = addr + len;
	*startp = start;
	*endp = end;
}

/* Read from a window when possible, else fetch a new one. */
enum perr rmem_read(struct rmem *m, uint64_t addr, void *out, size_t len)
{
	struct rmem_win *w;
	uint64_t start, end;
	enum perr err;

	if (m->fresh)
		return !len ? PERR_OK :
		       rmem_mapped(m, addr, len) ? procmem_read(&m->t->mem, addr, out, len) :
						   PERR_FAULT;
	if (win_has(&m->big, addr, len) && (!m->only_seq || m->big.seq == m->only_seq)) {
		win_take(&m->big, addr, out, len);
		return PERR_OK;
	}
	for (int i = 0; i < RMEM_WINDOWS; i++) {
		if (win_has(&m->win[i], addr, len) &&
		    (!m->only_seq || m->win[i].seq == m->only_seq)) {
			win_take(&m->win[i], addr, out, len);
			return PERR_OK;
		}
	}
	if (!len)
		return PERR_OK;
	if (m->only_seq)
		return PERR_CORRUPT;	/* not in that read */
	if (!rmem_mapped(m, addr, len))
		return PERR_FAULT;
	if (len > 2 * RMEM_PAGE)
		return procmem_read(&m->t->mem, addr, out, len);
	win_span(m, addr, len, &start, &end);
	w = &m->win[m->next++ % RMEM_WINDOWS];
	win_fit(w, (size_t)(end - start));
	w->len = 0;
	err = procmem_read(&m->t->mem, start, w->buf, (size_t)(end - start));
	if ((err == PERR_SHORT || err == PERR_FAULT) &&
	    (start < (addr & ~(uint64_t)(RMEM_PAGE - 1)) ||
	     end > ((addr + len + RMEM_PAGE - 1) & ~(uint64_t)(RMEM_PAGE - 1)))) {
		/*
		 * A page next to what was asked, in a readable map, that cannot
		 * be read: a guard region (madvise(MADV_GUARD_INSTALL), which
		 * glibc 2.42 puts at the bottom of a thread's stack, and which
		 * /proc/PID/maps does not show).  Only the pages asked for.
		 */
		start = addr & ~(uint64_t)(RMEM_PAGE - 1);
		end = (addr + len + RMEM_PAGE - 1) & ~(uint64_t)(RMEM_PAGE - 1);
		err = procmem_read(&m->t->mem, start, w->buf, (size_t)(end - start));
	}
	if (err)
		return err;
	w->addr = start;
	w->len = (size_t)(end - start);
	w->used = 0;
	w->seq = ++m->seq;
	win_take(w, addr, out, len);
	return PERR_OK;
}

enum perr rmem_load_big(struct rmem *m, uint64_t addr, size_t len)
{
	enum perr err;

	if (len && big_has(m, addr, len)) {
		m->big_want = (size_t)(addr - m->big.addr) + len;
		return PERR_OK;		/* replayed at the start of the sample */
	}
	m->big.len = 0;
	if (!len || !rmem_mapped(m, addr, len))
		return PERR_FAULT;
	win_fit(&m->big, len);
	err = procmem_read(&m->t->mem, addr, m->big.buf, len);
	if (err)
		return err;
	m->big.addr = addr;
	m->big.len = m->big_want = len;
	m->big.seq = ++m->seq;
	return PERR_OK;
}

unsigned char *rmem_big_prepare(struct rmem *m, uint64_t addr, size_t len)
{
	win_fit(&m->big, len ? len : 1);
	m->big.addr = addr;
	m->big.len = len;
	m->big.seq = ++m->seq;	/* the caller's own read */
	m->big_want = 0;	/* not to be replayed: the caller reads it */
	return m->big.buf;
}

/* Does fetch() take the region [addr, addr+len) into a window? */
static int fetchable(struct rmem *m, uint64_t addr, size_t len)
{
	/* a window spans up to three pages (two around an unaligned read) */
	return len && len <= 3 * RMEM_PAGE && rmem_mapped(m, addr, len);
}

/*
 * Fill the windows for the regions in one scatter read, the big window
 * [big, big+biglen) first when biglen is not 0; with pre, the regions
 * themselves into pre (one after the other) before it all.
 */
static enum perr fetch(struct rmem *m, uint64_t big, size_t biglen, const uint64_t *addr,
		       const size_t *len, unsigned int n, unsigned int how, unsigned char *pre)
{
	struct procmem_iov iov[2 * RMEM_WINDOWS + 1];
	struct rmem_win *w[2 * RMEM_WINDOWS + 1];
	uint64_t start, end;
	unsigned int k = 0, npre = 0;
	size_t done = 0, off = 0;
	enum perr err;

	for (unsigned int i = 0; pre && i < n && i < RMEM_WINDOWS; i++) {
		if (fetchable(m, addr[i], len[i])) {
			w[k] = NULL;
			iov[k++] = (struct procmem_iov){ addr[i], pre + off, len[i] };
		} else {
			memset(pre + off, 0xff, len[i]);	/* in no window: never equal */
		}
		off += len[i];
	}
	npre = k;
	if (biglen) {
		m->big.len = 0;
		if (!rmem_mapped(m, big, biglen))
			return PERR_FAULT;
		win_fit(&m->big, biglen);
		w[k] = &m->big;
		iov[k++] = (struct procmem_iov){ big, m->big.buf, biglen };
	}
	for (unsigned int i = 0; i < n && i < RMEM_WINDOWS; i++) {
		int have = 0;

		for (int j = 0; j < RMEM_WINDOWS && !have; j++) {
			have = win_has(&m->win[j], addr[i], len[i]);
			if (have && (how & FETCH_FRESH)) {
				/* read it again, with the big window: forget this copy */
				m->win[j].len = 0;
				have = 0;
			}
		}
		if (have || !fetchable(m, addr[i], len[i]))
			continue;
		if (how & FETCH_EXACT) {
			start = addr[i];
			end = addr[i] + len[i];
		} else {
			win_span(m, addr[i], len[i], &start, &end);
		}
		w[k] = &m->win[m->next++ % RMEM_WINDOWS];
		win_fit(w[k], (size_t)(end - start));
		w[k]->len = 0;
		iov[k] = (struct procmem_iov){ start, w[k]->buf, (size_t)(end - start) };
		k++;
	}
	if (k == npre)
		return PERR_OK;
	err = procmem_readv(&m->t->mem, iov, k, &done);
	m->seq++;
	if (pre && done < k)
		memset(pre, 0xff, off);	/* not all read: never equal to what the windows hold */
	for (size_t i = npre; i < done; i++) {
		w[i]->addr = iov[i].addr;
		w[i]->len = iov[i].len;
		w[i]->used = 0;		/* until a read finds it useful */
		w[i]->seq = m->seq;
	}
	return biglen && done <= npre ? (err ? err : PERR_SHORT) : PERR_OK;
}

void rmem_prefetch(struct rmem *m, const uint64_t *addr, const size_t *len, unsigned int n)
{
	fetch(m, 0, 0, addr, len, n < RMEM_WINDOWS / 2 ? n : RMEM_WINDOWS / 2, 0, NULL);
}


enum perr rmem_load_big_with(struct rmem *m, uint64_t addr, size_t len, const uint64_t *xaddr,
			     const size_t *xlen, unsigned int n, unsigned char *pre)
{
	if (!len)
		return PERR_FAULT;
	/* read afresh every time: not replayed at the next sample's start */
	m->big_want = 0;
	return fetch(m, addr, len, xaddr, xlen, n < RMEM_WINDOWS / 2 ? n : RMEM_WINDOWS / 2,
		     FETCH_FRESH, pre);
}
