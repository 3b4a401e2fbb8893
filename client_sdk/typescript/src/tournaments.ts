// Duplicate tournaments from TypeScript (TournamentService, docs/tournaments.md): a page of
// tournaments, one tournament with its standings, and its status in words.

import type { Client } from "@connectrpc/connect";
import {
  type Tournament,
  type TournamentService,
  TournamentStatus,
} from "./gen/spades/v1/tournament_pb.js";

/** The client these helpers need (``connectTo`` gives it). */
export interface TournamentClients {
  tournament: Client<typeof TournamentService>;
}

const STATUS_LABELS: Record<number, string> = {
  [TournamentStatus.ENTERING]: "entering",
  [TournamentStatus.RUNNING]: "running",
  [TournamentStatus.FINISHED]: "finished",
};

/** "entering", "running" or "finished". */
export function tournamentStatusLabel(status: TournamentStatus): string {
  return STATUS_LABELS[status] ?? "?";
}

/** One page of tournaments, newest first, and the next page's token ("" on the last). */
export async function tournamentsPage(
  clients: TournamentClients,
  pageToken = "",
  pageSize = 20,
): Promise<{ tournaments: Tournament[]; nextPageToken: string }> {
  const response = await clients.tournament.listTournaments({ pageSize, pageToken });
  return { tournaments: response.tournaments, nextPageToken: response.nextPageToken };
}

/** One tournament, with its pairings and standings (crosstable included); NOT_FOUND is thrown. */
export async function getTournament(clients: TournamentClients, tournamentId: string): Promise<Tournament> {
  const response = await clients.tournament.getTournament({ tournamentId });
  if (!response.tournament) throw new Error("the server sent no tournament");
  return response.tournament;
}
