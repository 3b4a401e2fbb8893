// Rated play in the browser: a pool's leaderboard (rank, name, bot or person, the rating the
// server sorts by with its mu and sigma, matches, provisional players marked), a player's page
// (the account, its rating per pool, its rating history drawn as a chart, its rated matches newest
// first, each linked to the table's record, and what main.ts adds: its recent results, partners
// and opponents from games.ts), and the link to a player's page that every seat held by an
// account shows.

import {
  type Account,
  AccountKind,
  type LeaderboardEntry,
  type MatchRated,
  POOLS,
  type Pool,
  type Rating,
  type SpadesClients,
  accountKindLabel,
  changeOf,
  getAccount,
  leaderboardPage as fetchLeaderboard,
  outcomeLabel,
  ratingsPage,
} from "@spades/client";
import { type ChartPoint, lineChart } from "./chart.js";
import { h, replace } from "./dom.js";
import { describe } from "./errors.js";

/** Players per leaderboard page, unless the address says (``#/leaderboard/POOL?page-size=N``). */
const LEADERBOARD_PAGE = 25;
const HISTORY_PAGE = 10;

/** Where a pool's leaderboard is. */
export function leaderboardHref(pool: Pool): string {
  return `#/leaderboard/${pool}`;
}

/** Where an account's page is. */
export function playerHref(accountId: string): string {
  return `#/player/${encodeURIComponent(accountId)}`;
}

/** A "bot" or "person" badge. */
export function kindBadge(bot: boolean): HTMLElement {
  return h("span", { class: `badge kind ${bot ? "bot" : "person"}` }, bot ? "bot" : "person");
}

/** A seat holder's name: linked to the player's page, with its kind, when an account holds it. */
export function holder(name: string, bot: boolean, accountId: string): (HTMLElement | string)[] {
  if (!accountId) return [name, ...(bot ? [h("span", { class: "badge" }, "bot")] : [])];
  return [h("a", { href: playerHref(accountId), class: "player", "data-account-id": accountId }, name), kindBadge(bot)];
}

function number(value: number): string {
  return value.toFixed(1);
}

function ratingCells(rating: Rating | undefined): HTMLElement[] {
  if (!rating) return [h("td", {}, ""), h("td", {}, ""), h("td", {}, ""), h("td", {}, "")];
  return [
    h("td", { class: "score" },
      h("span", { class: "value" }, number(rating.score)),
      rating.provisional ? h("span", { class: "badge provisional", title: "provisional: fewer than 10 rated matches" }, "provisional") : null),
    h("td", { class: "mu" }, number(rating.mu)),
    h("td", { class: "sigma" }, number(rating.sigma)),
    h("td", { class: "matches" }, String(rating.matches)),
  ];
}

function poolLinks(current?: Pool): HTMLElement {
  return h("nav", { class: "pools" }, "Leaderboards: ",
    ...POOLS.map((pool) => h("a", { href: leaderboardHref(pool), class: pool === current ? "pool current" : "pool" }, pool)));
}

/** A form that opens a player's page by name. */
function findPlayer(clients: SpadesClients, message: HTMLElement): HTMLElement {
  const name = h("input", { name: "player-name", maxlength: "32", required: true, placeholder: "a player's name" }) as HTMLInputElement;
  const form = h("form", { class: "find-player" }, h("label", {}, "Find a player ", name), h("button", { type: "submit" }, "Open"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void (async () => {
      try {
        const account = await getAccount(clients, { name: name.value.trim() });
        location.hash = playerHref(account.accountId);
      } catch (error) {
        message.textContent = `No such player: ${describe(error)}`;
      }
    })();
  });
  return form;
}

/** A Previous / Next pager over page tokens; ``show(token)`` loads a page and says its next token. */
export function pager(show: (token: string) => Promise<string>, labels = ["Previous", "Next"]): { element: HTMLElement; start: () => void } {
  const tokens: string[] = []; // the tokens of the pages before the shown one
  let current = "";
  let next = "";
  const previousButton = h("button", { type: "button", name: "previous-page" }, labels[0]) as HTMLButtonElement;
  const nextButton = h("button", { type: "button", name: "next-page" }, labels[1]) as HTMLButtonElement;
  const update = (): void => {
    previousButton.disabled = tokens.length === 0;
    nextButton.disabled = !next;
  };
  const load = async (token: string): Promise<void> => {
    current = token;
    next = await show(token);
    update();
  };
  previousButton.addEventListener("click", () => void load(tokens.pop() ?? ""));
  nextButton.addEventListener("click", () => {
    if (!next) return;
    tokens.push(current);
    void load(next);
  });
  update();
  return { element: h("div", { class: "pager" }, previousButton, " ", nextButton), start: () => void load("") };
}

export function leaderboardPage(root: HTMLElement, clients: SpadesClients, pool: Pool, pageSize = LEADERBOARD_PAGE): void {
  const size = Math.min(100, Math.max(1, Math.trunc(pageSize) || LEADERBOARD_PAGE)); // the API allows 1..100
  const body = h("tbody");
  const message = h("p", { class: "message", role: "status" });
  const headings = ["Rank", "Player", "Kind", "Rating", "μ", "σ", "Matches"];
  const pages = pager(async (token) => {
    try {
      const page = await fetchLeaderboard(clients, pool, token, size);
      replace(body, ...(page.entries.length
        ? page.entries.map(leaderboardRow)
        : [h("tr", {}, h("td", { colspan: String(headings.length) }, "No rated matches in this pool yet."))]));
      return page.nextPageToken;
    } catch (error) {
      message.textContent = `Could not load the leaderboard: ${describe(error)}`;
      return "";
    }
  });
  replace(
    root,
    h("section", { class: "leaderboard", "data-pool": pool },
      h("h1", {}, `Leaderboard: ${pool}`),
      poolLinks(pool),
      h("p", { class: "explain" },
        "Sorted by rating, μ − 3σ (a Weng–Lin estimate of skill, μ, less three times its uncertainty, σ). ",
        "A player is provisional until it has played 10 rated matches in the pool."),
      h("table", { class: "board" },
        h("thead", {}, h("tr", {}, ...headings.map((title) => h("th", {}, title)))),
        body,
      ),
      pages.element,
      findPlayer(clients, message),
      message,
    ),
  );
  pages.start();
}

function leaderboardRow(entry: LeaderboardEntry): HTMLElement {
  const provisional = entry.rating?.provisional ?? false;
  return h("tr", { "data-account-id": entry.accountId, class: provisional ? "entry provisional" : "entry" },
    h("td", { class: "rank" }, String(entry.rank)),
    h("td", { class: "name" }, h("a", { href: playerHref(entry.accountId), class: "player" }, entry.name)),
    h("td", { class: "kind" }, kindBadge(entry.bot),
      ...(entry.house ? [h("span", { class: "badge house", title: "one of the server's house-bot accounts" }, "house")] : [])),
    ...ratingCells(entry.rating),
  );
}

/** The rating history chart of each pool the account played in (its latest 100 rated matches). */
function ratingCharts(clients: SpadesClients, accountId: string): HTMLElement {
  const charts = h("div", { class: "rating-charts" }, h("p", {}, "Loading…"));
  void (async () => {
    try {
      const page = await ratingsPage(clients, accountId, "", 100);
      const drawn = POOLS.flatMap((pool) => {
        const matches = page.history.filter((match) => match.pool === pool).reverse(); // oldest first
        if (!matches.length) return [];
        const first = changeOf(matches[0] as MatchRated, accountId);
        const start = first?.before?.score ?? 0;
        const points: ChartPoint[] = [
          { time: Number(matches[0]?.time?.seconds ?? 0n) * 1000, value: start, label: `before the first rated match: ${number(start)}` },
          ...matches.map((match) => {
            const change = changeOf(match, accountId);
            const after = change?.after?.score ?? 0;
            const time = Number(match.time?.seconds ?? 0n) * 1000;
            return { time, value: after, label: `${timestamp(match.time?.seconds ?? 0n)}: ${change ? outcomeLabel(change.outcome) : ""}, ${number(after)}` };
          }),
        ];
        return [h("figure", { class: "rating-chart", "data-pool": pool },
          lineChart(points, `Rating in the ${pool} pool`),
          h("figcaption", {}, `${pool}: the rating (μ − 3σ) after each of the latest ${matches.length} rated matches`))];
      });
      replace(charts, ...(drawn.length ? drawn : [h("p", {}, "No rated matches yet.")]));
    } catch (error) {
      replace(charts, h("p", { class: "message error" }, `Could not load the rating history: ${describe(error)}`));
    }
  })();
  return charts;
}

export function playerPage(
  root: HTMLElement,
  clients: SpadesClients,
  which: { accountId: string } | { name: string },
  more: (account: Account) => HTMLElement[] = () => [],
): void {
  const view = h("section", { class: "player-page" }, h("p", {}, "Loading…"));
  replace(root, view);
  void (async () => {
    let account: Account;
    try {
      account = await getAccount(clients, which);
    } catch (error) {
      replace(view, h("p", { class: "message error" }, `No such player: ${describe(error)}`), poolLinks());
      return;
    }
    const ratings = h("tbody");
    const history = h("tbody");
    const message = h("p", { class: "message", role: "status" });
    const pages = pager(async (token) => {
      try {
        const page = await ratingsPage(clients, account.accountId, token, HISTORY_PAGE);
        replace(ratings, ...(page.ratings.length
          ? page.ratings.map((pool) => h("tr", { "data-pool": pool.pool },
            h("td", {}, h("a", { href: `#/leaderboard/${pool.pool}` }, pool.pool)),
            ...ratingCells(pool.rating)))
          : [h("tr", {}, h("td", { colspan: "5" }, "No rated matches yet."))]));
        replace(history, ...(page.history.length
          ? page.history.map((match) => historyRow(match, account.accountId))
          : [h("tr", {}, h("td", { colspan: "6" }, "No rated matches yet."))]));
        return page.nextPageToken;
      } catch (error) {
        message.textContent = `Could not load the ratings: ${describe(error)}`;
        return "";
      }
    }, ["Newer", "Older"]);
    const bot = account.kind === AccountKind.BOT;
    replace(
      view,
      h("h1", { "data-account-id": account.accountId }, account.name, " ", kindBadge(bot)),
      h("p", { class: "account" },
        `A ${accountKindLabel(account.kind)} account`,
        account.createTime ? `, created ${timestamp(account.createTime.seconds)}` : "",
        account.keyRevoked ? h("span", { class: "badge warn" }, "key revoked") : null),
      poolLinks(),
      h("h2", {}, "Ratings"),
      h("div", { class: "scroll" }, h("table", { class: "ratings" },
        h("thead", {}, h("tr", {}, ...["Pool", "Rating", "μ", "σ", "Matches"].map((title) => h("th", {}, title)))),
        ratings)),
      h("h2", {}, "Rating history"),
      ratingCharts(clients, account.accountId),
      ...more(account),
      h("h2", {}, "Rated matches, newest first"),
      h("div", { class: "scroll" }, h("table", { class: "history" },
        h("thead", {}, h("tr", {}, ...["When", "Pool", "Table", "Outcome", "Rating", "Change"].map((title) => h("th", {}, title)))),
        history)),
      pages.element,
      message,
    );
    pages.start();
  })();
}

function timestamp(seconds: bigint): string {
  return new Date(Number(seconds) * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

function historyRow(match: MatchRated, accountId: string): HTMLElement {
  const change = changeOf(match, accountId);
  const before = change?.before?.score ?? 0;
  const after = change?.after?.score ?? 0;
  const delta = after - before;
  return h("tr", { class: "rated-match", "data-table-id": match.tableId },
    h("td", { class: "when" }, match.time ? timestamp(match.time.seconds) : ""),
    h("td", {}, match.pool),
    h("td", {}, match.tableId
      ? h("a", { href: `#/record/${encodeURIComponent(match.tableId)}`, class: "record" }, match.tableId)
      : ""),
    h("td", { class: "outcome" }, change ? outcomeLabel(change.outcome) : ""),
    h("td", { class: "rating" }, change ? `${number(before)} → ${number(after)}` : ""),
    h("td", { class: `delta ${delta < 0 ? "negative" : "positive"}` }, change ? `${delta >= 0 ? "+" : ""}${number(delta)}` : ""),
  );
}
