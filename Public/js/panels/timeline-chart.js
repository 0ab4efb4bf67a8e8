// The timeline's chart: one lane per client or connection on a canvas, the offline spans
// shaded, each write a bar from queued (or sent) to its answer, each step a mark. Only what is
// in view is drawn (marks are found by binary search), so ten thousand steps stay smooth.
// Wheel zooms around the pointer, dragging pans, a double-click fits, a click selects a mark.

const GUTTER = 190; // the lane labels
const AXIS = 24; // the time axis on top
const ROW = 46;
const HIT = 6; // px around a mark that still hits it

function css(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

/** The index of the first mark at or after `ms` in `marks` (sorted by ms). */
export function firstAtOrAfter(marks, ms) {
  let lo = 0;
  let hi = marks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (marks[mid].ms < ms) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Nice steps for the axis: 1, 2, 5 × 10^n ms. */
function step(spanMs, widthPx) {
  const target = spanMs / Math.max(1, widthPx / 110);
  const power = 10 ** Math.floor(Math.log10(Math.max(target, 1e-3)));
  for (const m of [1, 2, 5, 10]) if (m * power >= target) return m * power;
  return 10 * power;
}

/** hh:mm:ss, with as many decimals of the second as the axis step needs (down to microseconds). */
function clockText(ms, stepMs) {
  const hms = new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(11, 19);
  if (stepMs >= 1000) return hms;
  const decimals = stepMs >= 1 ? 3 : 6;
  return hms + (((ms % 1000) + 1000) % 1000 / 1000).toFixed(decimals).slice(1);
}

export class TimelineChart {
  constructor(canvas, { onSelect }) {
    this.canvas = canvas;
    this.onSelect = onSelect;
    this.lanes = []; // [{id, title, subtitle, model}] as shown, top to bottom
    this.view = null; // [fromMs, toMs]
    this.selected = null;
    this.pending = false;
    this.following = true; // a live chart keeps its right edge at the newest step until moved
    this.listen();
    new ResizeObserver(() => this.draw()).observe(canvas.parentElement);
  }

  setLanes(lanes) {
    this.lanes = lanes;
    if (!this.view || this.following) this.fit({ keepFollowing: true });
    this.draw();
  }

  /** The time span of every shown step. */
  extent() {
    let from = Infinity;
    let to = -Infinity;
    for (const lane of this.lanes) {
      const marks = lane.model.marks;
      if (!marks.length) continue;
      from = Math.min(from, marks[0].ms);
      to = Math.max(to, marks[marks.length - 1].ms);
    }
    return from === Infinity ? null : [from, to];
  }

  fit({ keepFollowing = false } = {}) {
    const extent = this.extent();
    if (!extent) return;
    const pad = Math.max((extent[1] - extent[0]) * 0.04, 5);
    this.view = [extent[0] - pad, extent[1] + pad];
    if (!keepFollowing) this.following = true;
    this.draw();
  }

  x(ms) {
    const width = this.width - GUTTER;
    return GUTTER + ((ms - this.view[0]) / (this.view[1] - this.view[0])) * width;
  }

  ms(x) {
    return this.view[0] + ((x - GUTTER) / (this.width - GUTTER)) * (this.view[1] - this.view[0]);
  }

  draw() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.paint();
    });
  }

  paint() {
    const started = performance.now();
    const canvas = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    this.width = canvas.parentElement.clientWidth;
    const height = AXIS + Math.max(1, this.lanes.length) * ROW + 4;
    canvas.style.height = height + 'px';
    canvas.width = Math.round(this.width * ratio);
    canvas.height = Math.round(height * ratio);
    const g = canvas.getContext('2d');
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, this.width, height);
    if (!this.view || !this.lanes.length) return;
    const colors = {
      text: css('--text'), muted: css('--muted'), border: css('--border'), good: css('--good'), bad: css('--bad'),
      badSoft: css('--bad-soft'), info: css('--info'), accent: css('--accent'), focus: css('--focus'), surface2: css('--surface-2'),
    };
    this.paintAxis(g, colors, height);
    this.lanes.forEach((lane, index) => this.paintLane(g, colors, lane, AXIS + index * ROW));
    // What is drawn, for tests and tools that read the page: lanes, marks, the view, the cost.
    Object.assign(canvas.dataset, {
      lanes: this.lanes.map((lane) => lane.id).join(' '), marks: String(this.lanes.reduce((n, lane) => n + lane.model.marks.length, 0)),
      view: this.view.join(','), gutter: String(GUTTER), axis: String(AXIS), row: String(ROW), paintMs: (performance.now() - started).toFixed(1),
    });
  }

  paintAxis(g, c, height) {
    const span = this.view[1] - this.view[0];
    const every = step(span, this.width - GUTTER);
    g.font = '11px ' + css('--mono');
    g.textBaseline = 'middle';
    g.strokeStyle = c.border;
    g.fillStyle = c.muted;
    for (let t = Math.ceil(this.view[0] / every) * every; t <= this.view[1]; t += every) {
      const x = Math.round(this.x(t)) + 0.5;
      g.beginPath();
      g.moveTo(x, AXIS - 6);
      g.lineTo(x, height);
      g.globalAlpha = 0.35;
      g.stroke();
      g.globalAlpha = 1;
      g.fillText(clockText(t, every), x + 3, AXIS / 2);
    }
  }

  paintLane(g, c, lane, top) {
    const { model } = lane;
    const right = this.width;
    g.fillStyle = c.surface2;
    g.fillRect(0, top, GUTTER - 6, ROW - 2);
    g.fillStyle = c.text;
    g.font = '600 12px ' + css('--sans');
    g.textBaseline = 'alphabetic';
    g.fillText(lane.title.slice(0, 26), 8, top + 17);
    g.fillStyle = c.muted;
    g.font = '11px ' + css('--sans');
    g.fillText(lane.subtitle.slice(0, 30), 8, top + 33);
    g.save();
    g.beginPath();
    g.rect(GUTTER, top, right - GUTTER, ROW - 2);
    g.clip();
    const end = this.view[1];
    for (const [from, to] of model.offline) {
      const x0 = this.x(from);
      const x1 = this.x(to ?? Math.max(model.lastMs, end));
      if (x1 < GUTTER || x0 > right) continue;
      g.fillStyle = c.badSoft;
      g.fillRect(x0, top, Math.max(2, x1 - x0), ROW - 2);
    }
    for (const bar of model.writes) {
      const x0 = this.x(bar.start);
      const x1 = this.x(bar.end ?? Math.max(model.lastMs, end));
      if (x1 < GUTTER || x0 > right) continue;
      g.fillStyle = bar.outcome === 'writeRejected' ? c.bad : bar.outcome ? c.good : c.muted;
      g.globalAlpha = bar.outcome ? 0.85 : 0.5;
      g.fillRect(x0, top + ROW - 12 - Math.min(bar.row, 2) * 7, Math.max(3, x1 - x0), 5);
      g.globalAlpha = 1;
    }
    const marks = model.marks;
    const last = firstAtOrAfter(marks, this.ms(right + HIT));
    const previousX = new Map(); // kind → x of its last mark drawn
    for (let i = firstAtOrAfter(marks, this.ms(GUTTER - HIT)); i < last; i++) {
      const ev = marks[i];
      const x = this.x(ev.ms);
      // Marks of one kind closer than a pixel would paint over each other: one stands for them.
      if (x - (previousX.get(ev.kind) ?? -Infinity) < 1 && ev !== this.selected) continue;
      previousX.set(ev.kind, x);
      this.paintMark(g, c, ev, x, top + 16);
    }
    g.restore();
  }

  paintMark(g, c, ev, x, y) {
    g.beginPath();
    switch (ev.kind) {
      case 'snapshot':
        g.arc(x, y, 4, 0, Math.PI * 2);
        if (ev.fromCache) {
          g.strokeStyle = c.info;
          g.lineWidth = 1.5;
          g.stroke();
        } else {
          g.fillStyle = c.info;
          g.fill();
        }
        break;
      case 'network':
        g.fillStyle = ev.online ? c.good : c.bad;
        g.fillRect(x - 1, y - 10, 3, 24);
        break;
      case 'listenOpened':
      case 'listenClosed':
        g.moveTo(x, y - 6);
        g.lineTo(x + (ev.kind === 'listenOpened' ? 6 : -6), y);
        g.lineTo(x, y + 6);
        g.closePath();
        g.fillStyle = c.accent;
        g.fill();
        break;
      case 'writeQueued':
      case 'writeSent':
      case 'writeAcknowledged':
      case 'writeRejected':
        g.fillStyle = ev.kind === 'writeRejected' ? c.bad : ev.kind === 'writeAcknowledged' ? c.good : c.text;
        g.fillRect(x - 1, y + 12, 2, 12);
        break;
      default:
        g.fillStyle = c.muted;
        g.fillRect(x - 3, y - 3, 6, 6);
    }
    if (ev === this.selected) {
      g.strokeStyle = c.focus;
      g.lineWidth = 2;
      g.strokeRect(x - 7, y - 9, 14, 34);
    }
  }

  /** The step under (x, y): the nearest mark within HIT px, or the answer of the write bar hit. */
  hit(x, y) {
    const index = Math.floor((y - AXIS) / ROW);
    const lane = this.lanes[index];
    if (!lane || x < GUTTER) return null;
    const marks = lane.model.marks;
    let best = null;
    let bestDistance = HIT + 1;
    for (let i = firstAtOrAfter(marks, this.ms(x - HIT)); i < marks.length && marks[i].ms <= this.ms(x + HIT); i++) {
      const distance = Math.abs(this.x(marks[i].ms) - x);
      if (distance < bestDistance) {
        best = marks[i];
        bestDistance = distance;
      }
    }
    if (best) return { ev: best, lane };
    const t = this.ms(x);
    const bar = lane.model.writes.find((b) => b.start <= t && (b.end ?? Infinity) >= t);
    return bar ? { ev: bar.answer ?? bar.first, lane } : null;
  }

  select(ev, lane) {
    this.selected = ev;
    this.draw();
    this.onSelect(ev, lane);
  }

  listen() {
    const canvas = this.canvas;
    let drag = null;
    canvas.addEventListener('wheel', (e) => {
      if (!this.view) return;
      e.preventDefault();
      const at = this.ms(e.offsetX);
      const scale = Math.exp(Math.sign(e.deltaY) * Math.min(Math.abs(e.deltaY), 200) / 400);
      this.view = [at - (at - this.view[0]) * scale, at + (this.view[1] - at) * scale];
      this.following = false;
      this.draw();
    }, { passive: false });
    canvas.addEventListener('pointerdown', (e) => {
      if (!this.view) return;
      drag = { x: e.clientX, view: this.view.slice(), moved: false };
      canvas.setPointerCapture(e.pointerId);
    });
    canvas.addEventListener('pointermove', (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (!drag.moved) return;
      canvas.classList.add('panning');
      const perPx = (drag.view[1] - drag.view[0]) / (this.width - GUTTER);
      this.view = [drag.view[0] - dx * perPx, drag.view[1] - dx * perPx];
      this.following = false;
      this.draw();
    });
    canvas.addEventListener('pointerup', (e) => {
      canvas.classList.remove('panning');
      const clicked = drag && !drag.moved;
      drag = null;
      if (!clicked) return;
      const found = this.hit(e.offsetX, e.offsetY);
      if (found) this.select(found.ev, found.lane);
    });
    canvas.addEventListener('dblclick', () => this.fit());
  }
}
