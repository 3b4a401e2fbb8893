// "My games" in the browser: an account's finished matches, newest first, filtered (rated or
// not, the opponents' kind, one opponent) and paged, each row linked to the table's record
// (#/games for the signed-in person, with its private tables; #/games/ACCOUNT_ID for anyone's);
// and on a player's page its recent results and the partners and opponents it played with most.

import {
  type Account,
  type Game,
  type GamePlayer,
  GameRelation,
  type GamesFilters,
  OpponentsFilter,
  RatedFilter,
  type SpadesClients,
  accountOfCredential,
  gameOutcomeLabel,
  gameScore,
  gamesPage,
  playersOf,
  ratingChangeText,
} from "@spades/client";
import { SESSION_KEY } from "./account.js";
import { h, replace } from "./dom.js";
import { describe } from "./errors.js";
import { kindBadge, pager, playerHref } from "./ratings.js";
import { scoreText } from "./table.js";

const GAMES_PAGE = 20;
const RECENT_GAMES = 10;
/** Games read for a player's partners and opponents. */
const COMPANION_GAMES = 100;

/** Where an account's games are (``#/games`` alone: the signed-in person's). */
export function gamesHref(accountId = ""): string {
  return accountId ? `#/games/${encodeURIComponent(accountId)}` : "#/games";
}

function when(game: Game): string {
  const seconds = Number(game.endTime?.seconds ?? 0n);
  return new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 16);
}

function people(players: GamePlayer[]): (HTMLElement | string)[] {
  if (!players.length) return ["—"];
  return players.flatMap((player, index) => [
    index ? ", " : "",
    player.accountId
      ? h("a", { href: playerHref(player.accountId), class: "player" }, player.name)
      : player.name,
    kindBadge(player.bot),
  ]);
}

const HEADINGS = ["Ended (UTC)", "Result", "Score", "Partner", "Opponents", "Rated", "Record"];

function gameRow(game: Game): HTMLElement {
  const { own, others } = gameScore(game);
  const outcome = gameOutcomeLabel(game.outcome);
  const change = game.ratingChange;
  const delta = change ? (change.after?.score ?? 0) - (change.before?.score ?? 0) : 0;
  return h("tr", { class: `game ${outcome}`, "data-table-id": game.tableId },
    h("td", { class: "when" }, when(game)),
    h("td", { class: "outcome" }, outcome),
    h("td", { class: "score" }, [own, ...others].map(scoreText).join(" – ")),
    h("td", { class: "partners" }, ...people(playersOf(game, GameRelation.PARTNER))),
    h("td", { class: "opponents" }, ...people(playersOf(game, GameRelation.OPPONENT))),
    h("td", { class: "rated" },
      game.rated ? h("span", { class: "badge rated" }, game.pool || "rated") : "no",
      change ? h("span", { class: `rating-change ${delta < 0 ? "negative" : "positive"}` }, " ", ratingChangeText(change)) : null),
    h("td", { class: "record" },
      h("a", { href: `#/record/${encodeURIComponent(game.tableId)}`, class: "record", title: game.tableId }, game.name || "record"),
      game.private ? h("span", { class: "badge" }, "private") : null),
  );
}

function gamesTable(body: HTMLElement): HTMLElement {
  return h("div", { class: "scroll" },
    h("table", { class: "games" },
      h("thead", {}, h("tr", {}, ...HEADINGS.map((title) => h("th", { scope: "col" }, title)))),
      body));
}

function select(name: string, label: string, options: [number, string][]): [HTMLElement, HTMLSelectElement] {
  const element = h("select", { name }, ...options.map(([value, text]) => h("option", { value: String(value) }, text))) as HTMLSelectElement;
  return [h("label", {}, label, " ", element), element];
}

/** ``#/games`` (the signed-in person's, private tables too) or ``#/games/ACCOUNT_ID``. */
export function gamesPageView(root: HTMLElement, clients: SpadesClients, accountId = ""): void {
  const token = localStorage.getItem(SESSION_KEY) ?? "";
  const own = accountId === "" || accountId === accountOfCredential(token);
  const whose = accountId || accountOfCredential(token);
  if (!whose) {
    replace(root, h("section", { class: "games-page" },
      h("h1", {}, "My games"),
      h("p", { class: "message" }, "Sign in on ", h("a", { href: "#/account" }, "your account page"),
        " to see your games, or open a player's page from a ", h("a", { href: "#/leaderboard/partnership" }, "leaderboard"), ".")));
    return;
  }
  const headers: Record<string, string> = own && token ? { authorization: `Bearer ${token}` } : {};
  const body = h("tbody");
  const title = h("h1", {}, own ? "My games" : "Games");
  const message = h("p", { class: "message", role: "status" });
  const [ratedLabel, rated] = select("rated", "Rated", [[RatedFilter.UNSPECIFIED, "rated or not"], [RatedFilter.RATED, "rated"], [RatedFilter.UNRATED, "unrated"]]);
  const [opponentsLabel, opponents] = select("opponents", "Opponents", [[OpponentsFilter.UNSPECIFIED, "anyone"], [OpponentsFilter.BOTS, "bots only"], [OpponentsFilter.PEOPLE, "a person"]]);
  const opponent = h("input", { name: "opponent", maxlength: "64", placeholder: "a name" }) as HTMLInputElement;
  const form = h("form", { class: "games-filters", "aria-label": "Filter the games" },
    ratedLabel, opponentsLabel, h("label", {}, "Against ", opponent), h("button", { type: "submit" }, "Show"));
  const filters = (): GamesFilters => ({
    rated: Number(rated.value) as RatedFilter,
    opponents: Number(opponents.value) as OpponentsFilter,
    opponent: opponent.value.trim(),
  });
  const pages = pager(async (pageToken) => {
    try {
      const page = await gamesPage(clients, { accountId: whose }, filters(), pageToken, GAMES_PAGE, headers);
      message.textContent = "";
      replace(body, ...(page.games.length
        ? page.games.map(gameRow)
        : [h("tr", {}, h("td", { colspan: String(HEADINGS.length) }, pageToken ? "No more games." : "No finished games."))]));
      return page.nextPageToken;
    } catch (error) {
      message.className = "message error";
      message.textContent = `Could not load the games: ${describe(error)}`;
      replace(body);
      return "";
    }
  }, ["Newer", "Older"]);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    pages.start();
  });
  replace(root, h("section", { class: "games-page", "data-account-id": whose },
    title,
    own ? null : h("p", {}, h("a", { href: playerHref(whose) }, "The player's page")),
    form, message, gamesTable(body), pages.element));
  pages.start();
  if (!own) {
    void clients.account.getAccount({ accountId: whose }).then(
      (found) => { if (found.account) title.textContent = `Games of ${found.account.name}`; },
      () => undefined);
  }
}

interface Companion {
  player: GamePlayer;
  games: number;
  won: number;
}

function tally(games: Game[], relation: GameRelation): Companion[] {
  const byKey = new Map<string, Companion>();
  for (const game of games) {
    for (const player of playersOf(game, relation)) {
      const key = player.accountId || `name:${player.name}`;
      const companion = byKey.get(key) ?? { player, games: 0, won: 0 };
      companion.games += 1;
      if (gameOutcomeLabel(game.outcome) === "won") companion.won += 1;
      byKey.set(key, companion);
    }
  }
  return [...byKey.values()].sort((a, b) => b.games - a.games || a.player.name.localeCompare(b.player.name)).slice(0, 8);
}

function companionsTable(title: string, companions: Companion[], kind: string): HTMLElement {
  return h("div", { class: `companions ${kind}` },
    h("h3", {}, title),
    companions.length
      ? h("table", { class: kind },
        h("thead", {}, h("tr", {}, ...["Player", "Games", "Won"].map((label) => h("th", { scope: "col" }, label)))),
        h("tbody", {}, ...companions.map((companion) => h("tr", {},
          h("td", {}, ...people([companion.player])),
          h("td", { class: "count" }, String(companion.games)),
          h("td", { class: "count" }, String(companion.won))))))
      : h("p", {}, "None yet."));
}

/** A player's page's recent results and its partners and opponents (from its latest games). */
export function playerGames(clients: SpadesClients, account: Account): HTMLElement[] {
  const recent = h("tbody", {}, h("tr", {}, h("td", { colspan: String(HEADINGS.length) }, "Loading…")));
  const companions = h("div", { class: "companions-list" });
  void (async () => {
    try {
      const page = await gamesPage(clients, { accountId: account.accountId }, {}, "", COMPANION_GAMES);
      const games = page.games;
      replace(recent, ...(games.length
        ? games.slice(0, RECENT_GAMES).map(gameRow)
        : [h("tr", {}, h("td", { colspan: String(HEADINGS.length) }, "No finished games yet."))]));
      replace(companions,
        h("p", { class: "explain" }, `In the latest ${games.length} game${games.length === 1 ? "" : "s"}.`),
        h("div", { class: "companions-grid" },
          companionsTable("Partners", tally(games, GameRelation.PARTNER), "partners"),
          companionsTable("Opponents", tally(games, GameRelation.OPPONENT), "opponents")));
    } catch (error) {
      replace(recent, h("tr", {}, h("td", { colspan: String(HEADINGS.length) }, `Could not load the games: ${describe(error)}`)));
    }
  })();
  return [
    h("h2", {}, "Recent results"),
    gamesTable(recent),
    h("p", {}, h("a", { href: gamesHref(account.accountId), class: "all-games" }, "All games, with filters")),
    h("h2", {}, "Partners and opponents"),
    companions,
  ];
}
