// A line chart drawn as inline SVG (no library): the rating history on a player's page. Points
// are joined in the order given; the axes say the lowest and highest value and the first and
// last date; each point has a title (hover, and screen readers through the chart's description).

const SVG = "http://www.w3.org/2000/svg";

/** One point: when (ms since the epoch), the value, and what its title says. */
export interface ChartPoint {
  time: number;
  value: number;
  label: string;
}

function svg(tag: string, attributes: Record<string, string | number>, ...children: (Node | string)[]): SVGElement {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

function day(time: number): string {
  return new Date(time).toISOString().slice(0, 10);
}

/** The chart of ``points`` (at least one), ``title`` its accessible name. It scales to its
 * container's width (a viewBox), so it fits a phone's screen as a desktop's. */
export function lineChart(points: ChartPoint[], title: string, width = 400, height = 180): SVGElement {
  const margin = { left: 40, right: 10, top: 10, bottom: 26 };
  const values = points.map((point) => point.value);
  let low = Math.min(...values);
  let high = Math.max(...values);
  if (high - low < 1) {
    low -= 0.5;
    high += 0.5;
  }
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  // Evenly spaced by match (matches come in bursts: by time they would pile up).
  const x = (index: number): number =>
    margin.left + (points.length === 1 ? plotWidth / 2 : (index * plotWidth) / (points.length - 1));
  const y = (value: number): number => margin.top + ((high - value) * plotHeight) / (high - low);
  const path = points.map((point, index) => `${index ? "L" : "M"}${x(index).toFixed(1)},${y(point.value).toFixed(1)}`).join(" ");
  const first = points[0];
  const last = points[points.length - 1];
  const description = first && last
    ? `${points.length} points from ${first.value.toFixed(1)} on ${day(first.time)} to ${last.value.toFixed(1)} on ${day(last.time)}; lowest ${Math.min(...values).toFixed(1)}, highest ${Math.max(...values).toFixed(1)}`
    : "no points";
  const left = margin.left;
  const bottom = height - margin.bottom;
  return svg("svg", { class: "line-chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `${title}: ${description}`, preserveAspectRatio: "xMidYMid meet" },
    svg("title", {}, title),
    svg("desc", {}, description),
    svg("line", { class: "axis", x1: left, y1: margin.top, x2: left, y2: bottom }),
    svg("line", { class: "axis", x1: left, y1: bottom, x2: width - margin.right, y2: bottom }),
    svg("text", { class: "tick", x: left - 6, y: y(high) + 4, "text-anchor": "end" }, high.toFixed(1)),
    svg("text", { class: "tick", x: left - 6, y: y(low) + 4, "text-anchor": "end" }, low.toFixed(1)),
    ...(low < 0 && high > 0 ? [svg("line", { class: "zero", x1: left, y1: y(0), x2: width - margin.right, y2: y(0) })] : []),
    svg("text", { class: "tick", x: left, y: height - 8, "text-anchor": "start" }, first ? day(first.time) : ""),
    svg("text", { class: "tick", x: width - margin.right, y: height - 8, "text-anchor": "end" }, last ? day(last.time) : ""),
    svg("path", { class: "line", d: path, fill: "none" }),
    ...points.map((point, index) =>
      svg("circle", { class: "point", cx: x(index).toFixed(1), cy: y(point.value).toFixed(1), r: 3.5 }, svg("title", {}, point.label))),
  );
}
