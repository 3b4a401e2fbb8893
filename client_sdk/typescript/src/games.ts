// An account's finished matches from TypeScript (LobbyService.ListGames, docs/accounts.md "My
// games"): a page of games with their filters, each game's outcome, partners and opponents in
// words, and a rating change as people read it ("Rating 3.1 → 4.6 (+1.5)").

import type { Client } from "@connectrpc/connect";
import {
  type Game,
  GameOutcome,
  type GamePlayer,
  GameRelation,
  OpponentsFilter,
  RatedFilter,
} from "./gen/spades/v1/games_pb.js";
import type { LobbyService } from "./gen/spades/v1/lobby_pb.js";
import type { RatingChange } from "./gen/spades/v1/rating_pb.js";

/** The client these helpers need (``connectTo`` gives it). */
export interface GamesClients {
  lobby: Client<typeof LobbyService>;
}

/** Which games: rated or not, the opponents' kind, one opponent (an id or a name). */
export interface GamesFilters {
  rated?: RatedFilter;
  opponents?: OpponentsFilter;
  opponent?: string;
}

/** One page of an account's games, the most recently ended first. */
export interface GamesPage {
  accountId: string;
  games: Game[];
  /** "" on the last page. */
  nextPageToken: string;
}

/** The page of ``account``'s games at ``pageToken`` ("" for the newest). ``headers`` may carry
 * the account's own session (``authorization: Bearer``): its games at private tables come too. */
export async function gamesPage(
  clients: GamesClients,
  account: { accountId: string } | { name: string },
  filters: GamesFilters = {},
  pageToken = "",
  pageSize = 20,
  headers: Record<string, string> = {},
): Promise<GamesPage> {
  const response = await clients.lobby.listGames(
    {
      ...account,
      rated: filters.rated ?? RatedFilter.UNSPECIFIED,
      opponents: filters.opponents ?? OpponentsFilter.UNSPECIFIED,
      opponent: filters.opponent ?? "",
      pageToken,
      pageSize,
    },
    { headers },
  );
  return { accountId: response.accountId, games: response.games, nextPageToken: response.nextPageToken };
}

const GAME_OUTCOMES: Record<number, string> = {
  [GameOutcome.WON]: "won",
  [GameOutcome.LOST]: "lost",
  [GameOutcome.CLOSED]: "closed",
};

/** How a game went for its account, in a word. */
export function gameOutcomeLabel(outcome: GameOutcome): string {
  return GAME_OUTCOMES[outcome] ?? "?";
}

/** The game's partners (``GameRelation.PARTNER``) or opponents, one per account or name. */
export function playersOf(game: Game, relation: GameRelation): GamePlayer[] {
  const seen = new Set<string>();
  return game.players.filter((player) => {
    const key = player.accountId || player.name;
    if (player.relation !== relation || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The account's side's score against the others' ("420 – 310"). */
export function gameScore(game: Game): { own: number; others: number[] } {
  const own = game.finalScores[game.side] ?? 0;
  return { own, others: game.finalScores.filter((_, index) => index !== game.side) };
}

/** A rating change as people read it: the rating leaderboards sort by (μ − 3σ), before and
 * after, and the difference, as the terminal says it. */
export function ratingChangeText(change: RatingChange): string {
  const before = change.before?.score ?? 0;
  const after = change.after?.score ?? 0;
  const delta = after - before;
  return `Rating ${before.toFixed(1)} → ${after.toFixed(1)} (${delta >= 0 ? "+" : ""}${delta.toFixed(1)})`;
}

/** The account id a session token (``sps.<id>.<session>.<secret>``) or key names, or "". */
export function accountOfCredential(credential: string): string {
  const parts = credential.split(".");
  return parts.length >= 3 && (parts[0] === "sps" || parts[0] === "spk") ? (parts[1] ?? "") : "";
}
