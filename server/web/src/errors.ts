// How a failed call reads to a person: the one sentence every page shows after "Could not ...".
// Its own module so that the pages which show it (the lobby, ratings, records, tables,
// tournaments) need not import one another for it.

import { Code, ConnectError } from "@spades/client";

export function describe(error: unknown): string {
  if (error instanceof ConnectError) {
    return error.code === Code.Unavailable ? "the server cannot be reached" : error.rawMessage;
  }
  return String(error);
}
