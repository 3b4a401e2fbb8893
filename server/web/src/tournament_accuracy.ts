// Each entrant's accuracy on a finished tournament's page (docs/analysis.md): the share of its
// plays that lost no points double dummy, over every table it played, from the analyses the
// server keeps (AnalysisService). A table not yet analysed can be, double dummy only, from the
// page. Only once the tournament has ended: a live table is never analysed.

import {
  type Analysis,
  Code,
  ConnectError,
  type SpadesClients,
  type Tournament,
  seatName,
} from "@spades/client";
import { h, replace } from "./dom.js";
import { describe } from "./errors.js";

/** The seats the home entrant holds at a pairing's first table and at its second
 * (docs/tournaments.md: North-South, then East-West); the away entrant holds the others. */
const HOME_SEATS: readonly (readonly string[])[] = [["North", "South"], ["East", "West"]];

/** One entrant's totals over the tables analysed. */
export interface EntrantAccuracy {
  accountId: string;
  name: string;
  plays: number;
  /** Plays that lost no points. */
  clean: number;
  pointsLost: number;
  hands: number;
}

/** Every table of the tournament with the account holding each side there. */
function tablesOf(tournament: Tournament): { tableId: string; seats: Map<string, string> }[] {
  const found = [];
  for (const round of tournament.pairings) {
    for (const pairing of round.pairings) {
      if (!pairing.awayAccountId) continue;
      for (const [leg, tableId] of pairing.tableIds.entries()) {
        const home = HOME_SEATS[leg] ?? [];
        const seats = new Map<string, string>();
        for (const name of ["North", "East", "South", "West"]) {
          seats.set(name, home.includes(name) ? pairing.homeAccountId : pairing.awayAccountId);
        }
        found.push({ tableId, seats });
      }
    }
  }
  return found;
}

/** Each entrant's accuracy from the analyses of its tables (those in ``analyses``), in the
 * order of the standings. */
export function entrantAccuracy(tournament: Tournament, analyses: Map<string, Analysis>): EntrantAccuracy[] {
  const totals = new Map<string, EntrantAccuracy>();
  for (const line of tournament.standings?.lines ?? []) {
    totals.set(line.accountId, { accountId: line.accountId, name: line.name, plays: 0, clean: 0, pointsLost: 0, hands: 0 });
  }
  for (const { tableId, seats } of tablesOf(tournament)) {
    const analysis = analyses.get(tableId);
    if (!analysis) continue;
    for (const side of analysis.sides) {
      const holder = seats.get(seatName(side.seats[0] ?? 0));
      const total = holder === undefined ? undefined : totals.get(holder);
      if (!total) continue;
      total.plays += side.plays;
      total.clean += Math.round(side.accuracy * side.plays);
      total.pointsLost += side.lossPoints;
      total.hands += side.hands;
    }
  }
  return [...totals.values()];
}

function percent(part: number, whole: number): string {
  return whole ? `${Math.round((100 * part) / whole)}%` : "—";
}

function accuracyTable(lines: EntrantAccuracy[]): HTMLElement {
  const headings = ["Entrant", "Plays", "Accuracy", "Points lost per hand"];
  return h("table", { class: "board entrant-accuracy" },
    h("thead", {}, h("tr", {}, ...headings.map((title) => h("th", {}, title)))),
    h("tbody", {}, ...lines.map((line) => h("tr", { "data-account-id": line.accountId },
      h("td", { class: "name" }, line.name),
      h("td", { class: "plays" }, String(line.plays)),
      h("td", { class: "accuracy" }, percent(line.clean, line.plays)),
      h("td", { class: "per-hand" }, line.hands ? (line.pointsLost / line.hands).toFixed(1) : "—")))));
}

/** The accuracy section of a finished tournament's page: the table from the analyses kept,
 * and a button that has the server analyse (double dummy) the tables not analysed yet. */
export function accuracySection(clients: SpadesClients, tournament: Tournament, signal: AbortSignal): HTMLElement {
  const body = h("div", { class: "accuracy-body", role: "status" }, "Reading the analyses of its tables…");
  const tables = tablesOf(tournament).map((table) => table.tableId);
  const analyses = new Map<string, Analysis>();
  const show = (): void => {
    const missing = tables.filter((tableId) => !analyses.has(tableId));
    const parts: (HTMLElement | string)[] = [
      h("p", { class: "explain" },
        "The share of each entrant's plays that lost no points double dummy, over the tables analysed ",
        `(${tables.length - missing.length} of ${tables.length}).`),
      accuracyTable(entrantAccuracy(tournament, analyses)),
    ];
    if (missing.length) {
      const button = h("button", { type: "button", name: "analyse-tournament" },
        `Analyse the other ${missing.length} table${missing.length === 1 ? "" : "s"} (double dummy)`);
      button.addEventListener("click", () => void analyse(missing));
      parts.push(h("p", {}, button));
    }
    replace(body, ...parts);
  };
  const analyse = async (missing: string[]): Promise<void> => {
    try {
      for (const [index, tableId] of missing.entries()) {
        replace(body, h("span", { class: "analysis-progress" }, `Analysing table ${index + 1} of ${missing.length}…`));
        for await (const step of clients.analysis.analyseTable({ tableId, worlds: 0 }, { signal })) {
          if (step.kind.case === "analysis") analyses.set(tableId, step.kind.value);
        }
      }
      show();
    } catch (error) {
      if (!signal.aborted) replace(body, h("p", { class: "message error" }, `Could not analyse: ${describe(error)}`));
    }
  };
  void (async () => {
    try {
      for (const tableId of tables) {
        try {
          const kept = await clients.analysis.getAnalysis({ tableId }, { signal });
          if (kept.analysis) analyses.set(tableId, kept.analysis);
        } catch (error) {
          if (!(error instanceof ConnectError) || error.code !== Code.NotFound) throw error;
        }
      }
      if (!signal.aborted) show();
    } catch (error) {
      if (!signal.aborted) replace(body, h("p", { class: "message error" }, `Could not read the analyses: ${describe(error)}`));
    }
  })();
  return h("section", { class: "tournament-accuracy" }, h("h2", {}, "Accuracy"), body);
}
