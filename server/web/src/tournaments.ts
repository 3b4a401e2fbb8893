// Duplicate tournaments in the browser: the list of tournaments (newest first, with status and
// entrants), and a tournament's page: its settings, the standings (match points, won-tied-lost,
// duplicate points, boards, matches a house bot helped in), the crosstable, and each round's
// pairings with links to the two tables of each (docs/tournaments.md); once it has ended, each
// entrant's accuracy (tournament_accuracy.ts).

import {
  type SpadesClients,
  type Standings,
  type Tournament,
  TournamentFormat,
  TournamentStatus,
  getTournament,
  tournamentStatusLabel,
  tournamentsPage,
} from "@spades/client";
import { h, replace } from "./dom.js";
import { describe } from "./errors.js";
import { playerHref } from "./ratings.js";
import { accuracySection } from "./tournament_accuracy.js";

/** Where the list of tournaments is. */
export const TOURNAMENTS_HREF = "#/tournaments";

/** Where a tournament's page is. */
export function tournamentHref(tournamentId: string): string {
  return `#/tournament/${encodeURIComponent(tournamentId)}`;
}

/** How often a running tournament's page reloads its standings, in milliseconds. */
const REFRESH_MS = 2000;

function statusBadge(status: TournamentStatus): HTMLElement {
  const label = tournamentStatusLabel(status);
  return h("span", { class: `badge status ${label}` }, label);
}

export function tournamentsListPage(root: HTMLElement, clients: SpadesClients): void {
  const body = h("tbody");
  const message = h("p", { class: "message", role: "status" });
  replace(
    root,
    h("section", { class: "tournaments" },
      h("h1", {}, "Tournaments"),
      h("p", { class: "explain" },
        "Duplicate round robins run by the server: each pairing plays the same boards at two tables, ",
        "partnerships swapped."),
      h("table", { class: "board" },
        h("thead", {}, h("tr", {}, ...["Tournament", "Status", "Entrants", "Round", "Leader"].map((t) => h("th", {}, t)))),
        body),
      message),
  );
  void (async () => {
    try {
      const page = await tournamentsPage(clients, "", 50);
      replace(body, ...(page.tournaments.length
        ? page.tournaments.map((t) => h("tr", { class: "tournament", "data-tournament-id": t.tournamentId },
          h("td", {}, h("a", { href: tournamentHref(t.tournamentId) }, t.settings?.name ?? t.tournamentId)),
          h("td", {}, statusBadge(t.status)),
          h("td", { class: "entrants" }, String(t.entrants.length)),
          h("td", {}, t.rounds ? `${t.round} of ${t.rounds}` : "—"),
          h("td", { class: "leader" }, leaderText(t.standings))))
        : [h("tr", {}, h("td", { colspan: "5" }, "No tournaments yet."))]));
    } catch (error) {
      message.textContent = `Could not load the tournaments: ${describe(error)}`;
    }
  })();
}

/** Who leads: the entrant ranked first, unless others equal it on every tie-break but the
 * order of entry (docs/tournaments.md), which ranks without anyone leading: then a tie, with no
 * single leader (before any match is scored, every entrant ties). */
export function leaderText(standings: Standings | undefined): string {
  const [first, ...rest] = standings?.lines ?? [];
  if (!first) return "";
  const level = (line: typeof first): boolean =>
    line.matchPoints === first.matchPoints && line.duplicatePoints === first.duplicatePoints &&
    line.won === first.won && line.substitutedMatches === first.substitutedMatches;
  const tied = [first, ...rest.filter(level)];
  return tied.length > 1 ? `tied: ${tied.map((line) => line.name).join(", ")}` : first.name;
}

function standingsTable(standings: Standings | undefined): HTMLElement {
  const headings = ["#", "Entrant", "MP", "W-T-L", "Duplicate", "Boards", "House bot"];
  const lines = standings?.lines ?? [];
  return h("table", { class: "board standings" },
    h("thead", {}, h("tr", {}, ...headings.map((title) => h("th", {}, title)))),
    h("tbody", {}, ...lines.map((line) => h("tr", { class: "line", "data-account-id": line.accountId },
      h("td", { class: "rank" }, String(line.rank)),
      h("td", { class: "name" }, h("a", { href: playerHref(line.accountId), class: "player" }, line.name)),
      h("td", { class: "match-points" }, String(line.matchPoints)),
      h("td", { class: "record" }, `${line.won}-${line.tied}-${line.lost}`),
      h("td", { class: "duplicate" }, line.duplicatePoints > 0 ? `+${line.duplicatePoints}` : String(line.duplicatePoints)),
      h("td", { class: "boards" }, String(line.boards)),
      h("td", { class: "note" }, line.substitutedMatches ? h("span", { class: "badge warn" }, `house bot in ${line.substitutedMatches}`) : "")))));
}

function crosstable(tournament: Tournament): HTMLElement {
  const lines = tournament.standings?.lines ?? [];
  const names = new Map(lines.map((line) => [line.accountId, line.name]));
  const order = lines.map((line) => line.accountId);
  return h("table", { class: "board crosstable" },
    h("thead", {}, h("tr", {}, h("th", {}, ""), ...order.map((id) => h("th", {}, names.get(id) ?? id)))),
    h("tbody", {}, ...(tournament.standings?.crosstable ?? []).map((row) => {
      const cells = new Map(row.cells.map((cell) => [cell.opponentAccountId, cell]));
      return h("tr", { "data-account-id": row.accountId },
        h("th", {}, names.get(row.accountId) ?? row.accountId),
        ...order.map((id) => {
          const cell = cells.get(id);
          return h("td", { class: "cell" }, id === row.accountId ? "×" : cell ? `${cell.matchPoints} (${cell.duplicatePoints > 0 ? "+" : ""}${cell.duplicatePoints})` : "");
        }));
    })));
}

function pairings(tournament: Tournament): HTMLElement {
  const names = new Map(tournament.entrants.map((e) => [e.accountId, e.name]));
  return h("div", { class: "rounds" }, ...tournament.pairings.map((round) => h("div", { class: "round" },
    h("h3", {}, `Round ${round.round}`),
    h("ul", {}, ...round.pairings.map((pairing) => h("li", { class: "pairing" },
      `${names.get(pairing.homeAccountId) ?? "?"} – ${pairing.awayAccountId ? names.get(pairing.awayAccountId) ?? "?" : "bye"}`,
      ...pairing.tableIds.map((tableId, leg) => [" ", h("a", { href: `#/table/${tableId}`, class: "table-link" }, `table ${leg + 1}`)]).flat()))))));
}

export function tournamentPage(root: HTMLElement, clients: SpadesClients, tournamentId: string, signal: AbortSignal): void {
  const view = h("section", { class: "tournament-page" }, h("p", {}, "Loading…"));
  replace(root, view);
  const show = async (): Promise<void> => {
    let tournament: Tournament;
    try {
      tournament = await getTournament(clients, tournamentId);
    } catch (error) {
      replace(view, h("p", { class: "message error" }, `No such tournament: ${describe(error)}`));
      return;
    }
    const settings = tournament.settings;
    replace(view,
      h("h1", { "data-tournament-id": tournament.tournamentId }, settings?.name ?? tournamentId, " ", statusBadge(tournament.status)),
      h("p", { class: "explain" },
        `${settings?.format === TournamentFormat.SWISS ? "A duplicate Swiss" : "A duplicate round robin"} of ${tournament.entrants.length} entrants, ${settings?.boards ?? 0} boards a round`,
        tournament.rounds ? `, round ${tournament.round} of ${tournament.rounds}.` : "."),
      h("h2", {}, "Standings"),
      standingsTable(tournament.standings),
      h("h2", {}, "Crosstable"),
      crosstable(tournament),
      // Each entrant's accuracy once it has ended (never during play: docs/analysis.md).
      tournament.status === TournamentStatus.FINISHED ? accuracySection(clients, tournament, signal) : "",
      h("h2", {}, "Rounds"),
      pairings(tournament),
      h("p", { class: "seed" }, "Seed commitment ",
        h("code", {}, Array.from(tournament.seedCommitment, (b) => b.toString(16).padStart(2, "0")).join("")),
        tournament.seed.length ? " (seed revealed: the record verifies offline)" : ""),
      h("p", {}, h("a", { href: TOURNAMENTS_HREF }, "All tournaments")));
    if (tournament.status !== TournamentStatus.FINISHED && !signal.aborted) {
      setTimeout(() => { if (!signal.aborted) void show(); }, REFRESH_MS);
    }
  };
  void show();
}
