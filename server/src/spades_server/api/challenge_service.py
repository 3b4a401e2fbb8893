"""ChallengeService: create, accept, decline, cancel, look up, list and watch challenges.

A thin servicer over :mod:`spades_server.processes.challenge_flow`: who may call is settled
here (the account's Bearer key), what is appended is decided in
:mod:`spades_server.domain.challenges`."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any, Final

import grpc
import structlog

from spades.reasons import Reason
from spades.v1 import (
    challenge_pb2,
    challenge_pb2_grpc,
)
from spades_server.api.auth import bearer_key_from, caller_address
from spades_server.domain import accounts, errors, paging, tokens
from spades_server.domain.accounts import Account
from spades_server.domain.challenges import (
    PENDING,
    ChallengeState,
    challenge_id_for,
    check_opponent_ids,
    decide_acceptance,
    decide_cancel,
    decide_creation,
    decide_decline,
)
from spades_server.domain.checks import check_request_id, rules_of
from spades_server.processes.challenge_flow import Challenges
from spades_server.v1 import log_pb2

log = structlog.get_logger()

Context = grpc.aio.ServicerContext[Any, Any]


DEFAULT_PAGE_SIZE: Final = 20


MAX_PAGE_SIZE: Final = 100


# ---------------------------------------------------------------------------------- servicer


def _key_required() -> errors.RequestError:
    return errors.refuse(
        Reason.KEY_REQUIRED, "send the account's key as the 'authorization: Bearer <key>' metadata"
    )


class ChallengeServicer(challenge_pb2_grpc.ChallengeServiceServicer):
    """Create, answer, cancel and read challenges."""

    def __init__(self, challenges: Challenges) -> None:
        self._challenges = challenges
        self._store = challenges.store
        self._accounts = challenges.accounts

    async def _caller(self, context: Context) -> Account:
        key = bearer_key_from(context)
        if key is None:
            raise _key_required()
        return await self._accounts.authenticate(key, address=caller_address(context))

    async def CreateChallenge(
        self, request: challenge_pb2.CreateChallengeRequest, context: Context
    ) -> challenge_pb2.CreateChallengeResponse:
        challenger = await self._caller(context)
        request_id = check_request_id(request.request_id)
        rules = rules_of(request.rules)
        opponent_ids = check_opponent_ids(list(request.opponent_ids), challenger, rules.players)
        request_digest = tokens.digest(request_id) if request_id else b""
        challenge_id = (
            challenge_id_for(request_id, challenger.account_id)
            if request_id
            else secrets.token_hex(10)
        )
        if request_id:
            earlier = await self._created_before(challenge_id, request_digest, challenger)
            if earlier is not None:
                return challenge_pb2.CreateChallengeResponse(challenge=earlier)
        opponents = []
        for index, opponent_id in enumerate(opponent_ids):
            try:
                opponents.append(await self._accounts.load(opponent_id))
            except errors.RequestError as error:
                if error.code is not grpc.StatusCode.NOT_FOUND:
                    raise
                raise errors.refuse(
                    Reason.ACCOUNT_NOT_FOUND,
                    f"there is no account {opponent_id!r}",
                    field=f"opponent_ids[{index}]",
                ) from None
        made = decide_creation(
            challenge_id,
            challenger,
            opponents,
            request.rules,
            rated=request.rated,
            seating=list(request.seating),
            expiry_seconds=request.expiry_seconds,
            now=self._challenges.clock.now(),
            series_length=request.series_length,
        )
        if not await self._store.create(made, request_digest):
            earlier = await self._created_before(challenge_id, request_digest, challenger)
            if earlier is None:  # a random id taken: 80 bits make this all but impossible
                raise errors.refuse(
                    Reason.CHALLENGE_CONTENDED, "the challenge id was taken; try again"
                )
            return challenge_pb2.CreateChallengeResponse(challenge=earlier)
        challenge = await self._store.load(challenge_id)
        await self._challenges.announce(challenge)
        log.info(
            "challenge made",
            challenge_id=challenge_id,
            challenger=challenger.account_id,
            opponents=opponent_ids,
            rated=request.rated,
        )
        return challenge_pb2.CreateChallengeResponse(
            challenge=challenge.view(self._challenges.clock.now())
        )

    async def _created_before(
        self, challenge_id: str, request_digest: bytes, challenger: Account
    ) -> challenge_pb2.Challenge | None:
        """The challenge a CreateChallenge with this request id made, if there is one."""
        if not request_digest:
            return None
        try:
            challenge = await self._store.load(challenge_id)
        except errors.RequestError as error:
            if error.code is grpc.StatusCode.NOT_FOUND:
                return None
            raise
        if (
            challenge.created_by_request != request_digest
            or challenge.message.challenger_id != challenger.account_id
        ):
            raise accounts.request_id_reused()
        await self._challenges.announce(challenge)  # a crash may have come before it
        return challenge.view(self._challenges.clock.now())

    async def _answer(
        self,
        challenge_id: str,
        request_id: str,
        decide: Callable[[ChallengeState, float, bytes], log_pb2.ChallengeLogEntry | None],
    ) -> challenge_pb2.Challenge:
        """Append the answer ``decide`` makes, or none when it is a retry of one made with
        ``request_id`` (the answer is told again while the challenge is as it left it)."""
        request_digest = tokens.digest(check_request_id(request_id)) if request_id else b""
        await self._challenges.settle(challenge_id)
        appended: list[log_pb2.ChallengeLogEntry] = []

        def decision(challenge: ChallengeState) -> log_pb2.ChallengeLogEntry | None:
            appended.clear()
            entry = decide(challenge, self._challenges.clock.now(), request_digest)
            if entry is not None:
                appended.append(entry)
            return entry

        challenge = await self._store.execute(challenge_id, decision)
        if appended:
            await self._challenges.answered(challenge, appended[-1])
        else:  # a retry: a crash may have come between the answer and its telling
            earlier = challenge.answers[request_digest]
            if challenge.message.state == earlier.state:
                await self._challenges.answered(challenge, earlier.entry)
        return challenge.view(self._challenges.clock.now())

    async def AcceptChallenge(
        self, request: challenge_pb2.AcceptChallengeRequest, context: Context
    ) -> challenge_pb2.AcceptChallengeResponse:
        account = await self._caller(context)
        challenge = await self._answer(
            request.challenge_id,
            request.request_id,
            lambda c, now, digest: decide_acceptance(c, account, now, digest),
        )
        log.info(
            "challenge accepted",
            challenge_id=request.challenge_id,
            account_id=account.account_id,
            table_id=challenge.table_id,
        )
        return challenge_pb2.AcceptChallengeResponse(challenge=challenge)

    async def DeclineChallenge(
        self, request: challenge_pb2.DeclineChallengeRequest, context: Context
    ) -> challenge_pb2.DeclineChallengeResponse:
        account = await self._caller(context)
        if request.reason not in challenge_pb2.DeclineReason.values():
            raise errors.refuse(
                Reason.MALFORMED_REQUEST, "reason is not a DeclineReason", field="reason"
            )
        challenge = await self._answer(
            request.challenge_id,
            request.request_id,
            lambda c, now, digest: decide_decline(c, account, request.reason, now, digest),
        )
        log.info(
            "challenge declined", challenge_id=request.challenge_id, account_id=account.account_id
        )
        return challenge_pb2.DeclineChallengeResponse(challenge=challenge)

    async def CancelChallenge(
        self, request: challenge_pb2.CancelChallengeRequest, context: Context
    ) -> challenge_pb2.CancelChallengeResponse:
        account = await self._caller(context)
        challenge = await self._answer(
            request.challenge_id,
            request.request_id,
            lambda c, now, digest: decide_cancel(c, account, now, digest),
        )
        log.info("challenge cancelled", challenge_id=request.challenge_id)
        return challenge_pb2.CancelChallengeResponse(challenge=challenge)

    async def GetChallenge(
        self, request: challenge_pb2.GetChallengeRequest, context: Context
    ) -> challenge_pb2.GetChallengeResponse:
        challenge = await self._challenges.settle(request.challenge_id)
        return challenge_pb2.GetChallengeResponse(
            challenge=challenge.view(self._challenges.clock.now())
        )

    async def ListChallenges(
        self, request: challenge_pb2.ListChallengesRequest, context: Context
    ) -> challenge_pb2.ListChallengesResponse:
        account = await self._caller(context)
        if request.direction not in challenge_pb2.ChallengeDirection.values():
            raise errors.refuse(
                Reason.MALFORMED_REQUEST, "direction is not a ChallengeDirection", field="direction"
            )
        wanted = {
            challenge_pb2.CHALLENGE_DIRECTION_UNSPECIFIED: (True, False),
            challenge_pb2.CHALLENGE_DIRECTION_INCOMING: (False,),
            challenge_pb2.CHALLENGE_DIRECTION_OUTGOING: (True,),
        }[request.direction]
        ids = [cid for cid, outgoing in reversed(account.challenges) if outgoing in wanted]
        now = self._challenges.clock.now()
        if request.pending_only:
            shown = []
            for challenge_id in ids:
                challenge = (await self._store.load(challenge_id)).view(now)
                if challenge.state == PENDING:
                    shown.append(challenge)
            found, next_token = paging.page(
                shown,
                page_size=request.page_size,
                page_token=request.page_token,
                default_size=DEFAULT_PAGE_SIZE,
                max_size=MAX_PAGE_SIZE,
            )
        else:
            page_ids, next_token = paging.page(
                ids,
                page_size=request.page_size,
                page_token=request.page_token,
                default_size=DEFAULT_PAGE_SIZE,
                max_size=MAX_PAGE_SIZE,
            )
            found = [(await self._store.load(cid)).view(now) for cid in page_ids]
        return challenge_pb2.ListChallengesResponse(challenges=found, next_page_token=next_token)
