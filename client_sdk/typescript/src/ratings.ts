// Accounts, ratings and leaderboards from TypeScript (AccountService, RatingService): an account
// by id or name, a pool's leaderboard a page at a time, and an account's ratings with its history.

import type { Client } from "@connectrpc/connect";
import {
  type Account,
  AccountKind,
  type AccountService,
} from "./gen/spades/v1/account_pb.js";
import {
  type LeaderboardEntry,
  type MatchRated,
  MatchOutcome,
  type PoolRating,
  type RatingChange,
  type RatingService,
} from "./gen/spades/v1/rating_pb.js";

/** The rating pools the server keeps (rating.proto): four-player partnership and cutthroat. */
export const POOLS = ["partnership", "cutthroat"] as const;
export type Pool = (typeof POOLS)[number];

/** Whether ``name`` is one of {@link POOLS}. */
export function isPool(name: string): name is Pool {
  return (POOLS as readonly string[]).includes(name);
}

/** The clients these helpers need (``connectTo`` gives them). */
export interface RatingClients {
  account: Client<typeof AccountService>;
  rating: Client<typeof RatingService>;
}

/** "bot" or "person", as an account's kind is shown everywhere it sits. */
export function accountKindLabel(kind: AccountKind): string {
  return kind === AccountKind.BOT ? "bot" : kind === AccountKind.PERSON ? "person" : "?";
}

const OUTCOME_LABELS: Record<number, string> = {
  [MatchOutcome.WON]: "won",
  [MatchOutcome.LOST]: "lost",
  [MatchOutcome.SUBSTITUTED]: "substituted (a loss)",
  [MatchOutcome.NOT_RATED]: "not rated (another player was substituted)",
};

/** How a rated match ended for one entrant, in words. */
export function outcomeLabel(outcome: MatchOutcome): string {
  return OUTCOME_LABELS[outcome] ?? "?";
}

/** An account by its id, or with ``{ name }`` by its name (any case); NOT_FOUND is thrown. */
export async function getAccount(
  clients: RatingClients,
  which: { accountId: string } | { name: string },
): Promise<Account> {
  const response = await clients.account.getAccount(which);
  if (!response.account) throw new Error("the server sent no account");
  return response.account;
}

/** One page of a leaderboard: its entries, best first, and the next page's token ("" at the end). */
export interface LeaderboardPage {
  entries: LeaderboardEntry[];
  nextPageToken: string;
}

/** The page of ``pool``'s leaderboard at ``pageToken`` ("" for the first). */
export async function leaderboardPage(
  clients: RatingClients,
  pool: Pool,
  pageToken = "",
  pageSize = 50,
): Promise<LeaderboardPage> {
  const response = await clients.rating.listLeaderboard({ pool, pageToken, pageSize });
  return { entries: response.entries, nextPageToken: response.nextPageToken };
}

/** An account's rating in each pool it played in, and one page of its history (newest first). */
export interface RatingsPage {
  ratings: PoolRating[];
  history: MatchRated[];
  nextPageToken: string;
}

/** The account's ratings and the page of its history at ``pageToken`` ("" for the newest). */
export async function ratingsPage(
  clients: RatingClients,
  accountId: string,
  pageToken = "",
  pageSize = 20,
): Promise<RatingsPage> {
  const response = await clients.rating.getRatings({ accountId, pageToken, pageSize });
  return { ratings: response.ratings, history: response.history, nextPageToken: response.nextPageToken };
}

/** The account's own change in a rated match of its history. */
export function changeOf(match: MatchRated, accountId: string): RatingChange | undefined {
  return match.changes.find((change) => change.accountId === accountId);
}
