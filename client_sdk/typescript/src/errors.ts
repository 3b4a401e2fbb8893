// What a program acts on when the server refuses (docs/errors.md): the stable reason code, the
// fields at fault and how long to wait, read from the google.rpc.Status that a refused call
// (a ConnectError: its grpc-status-details-bin trailer) or a refused action
// (ActionResult.status) carries. The human reason stays the error's message / result.reason.

import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { type Any, anyUnpack } from "@bufbuild/protobuf/wkt";
import { ConnectError } from "@connectrpc/connect";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  RetryInfoSchema,
} from "./gen/google/rpc/error_details_pb.js";
import type { ActionResult } from "./gen/spades/v1/play_pb.js";

/** The domain of every ErrorInfo the service sends. */
export const ERROR_DOMAIN = "spades.v1";

export interface Refusal {
  /** The stable UPPER_SNAKE code ("MUST_FOLLOW_SUIT"); "" when none was sent. */
  reasonCode: string;
  /** Short facts about the refusal (ErrorInfo.metadata), e.g. { table_sequence: "12" }. */
  metadata: Record<string, string>;
  /** The paths of the request fields at fault (BadRequest.FieldViolation.field). */
  fields: string[];
  /** How long to wait before trying again (RetryInfo), when waiting helps. */
  retryDelayMs?: number;
}

/** The reason code, fields and retry delay of a refused call or action. */
export function refusalOf(source: ConnectError | ActionResult): Refusal {
  const find = <Desc extends DescMessage>(schema: Desc): MessageShape<Desc>[] =>
    source instanceof ConnectError
      ? source.findDetails(schema)
      : (source.status?.details ?? [])
          .map((detail: Any) => anyUnpack(detail, schema))
          .filter((message): message is MessageShape<Desc> => message !== undefined);
  const info = find(ErrorInfoSchema).find((each) => each.domain === ERROR_DOMAIN);
  const refusal: Refusal = {
    reasonCode: info?.reason ?? "",
    metadata: { ...(info?.metadata ?? {}) },
    fields: find(BadRequestSchema).flatMap((bad) => bad.fieldViolations.map((v) => v.field)),
  };
  const delay = find(RetryInfoSchema)[0]?.retryDelay;
  if (delay) refusal.retryDelayMs = Number(delay.seconds) * 1000 + delay.nanos / 1e6;
  return refusal;
}
