// Drag-to-select over an ECharts grid, drawn by us: a rectangle (heatmap cells) or a band
// across the x axis (timechart zoom). The end points are turned into axis values with
// convertFromPixel, so the caller gets data coordinates, not pixels.
import type * as echarts from 'echarts/core';

export type DragMode = 'rect' | 'x';

/**
 * Call once per chart host; `chart()` returns the current instance. A rectangle stays drawn
 * after the drag (it is the selection) until the returned function clears it.
 */
export function dragSelect(host: HTMLElement, chart: () => echarts.ECharts | null, mode: DragMode, onSelect: (from: number[], to: number[]) => void): () => void {
  const box = document.createElement('div');
  box.className = 'drag-select';
  box.hidden = true;
  host.style.position = host.style.position || 'relative';
  host.appendChild(box);
  let start: [number, number] | null = null;
  const point = (e: MouseEvent): [number, number] => {
    const r = host.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  };
  const inGrid = (p: [number, number]) => chart()?.containPixel({ gridIndex: 0 }, p) ?? false;
  host.addEventListener('mousedown', (e) => {
    if (e.button !== 0) return;
    const p = point(e);
    if (!inGrid(p)) return;
    e.preventDefault();
    start = p;
    const move = (ev: MouseEvent) => {
      if (!start) return;
      const q = point(ev);
      const left = Math.min(start[0], q[0]);
      const width = Math.abs(q[0] - start[0]);
      box.hidden = width < 3;
      box.style.left = `${left}px`;
      box.style.width = `${width}px`;
      if (mode === 'rect') {
        box.style.top = `${Math.min(start[1], q[1])}px`;
        box.style.height = `${Math.abs(q[1] - start[1])}px`;
      } else {
        box.style.top = '0';
        box.style.height = '100%';
      }
    };
    const up = (ev: MouseEvent) => {
      window.removeEventListener('mousemove', move);
      window.removeEventListener('mouseup', up);
      const s = start;
      start = null;
      const q = point(ev);
      const c = chart();
      box.hidden = mode !== 'rect' || !s || Math.abs(q[0] - s[0]) < 4;
      if (!s || !c || Math.abs(q[0] - s[0]) < 4) return;
      const a = c.convertFromPixel({ gridIndex: 0 }, s) as number[];
      const b = c.convertFromPixel({ gridIndex: 0 }, q) as number[];
      if (a && b) onSelect(a, b);
    };
    window.addEventListener('mousemove', move);
    window.addEventListener('mouseup', up);
  });
  return () => {
    box.hidden = true;
  };
}
