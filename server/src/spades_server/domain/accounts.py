"""Accounts as event-sourced aggregates: a lasting identity (bot or person) with one API key.

Each account is one stream of the same event log as the tables, ``account-<account id>``, of
``spades.server.v1.AccountLogEntry`` rows: the public ``spades.v1.AccountEvent`` and, beside it,
the SHA-256 of a key it issued (never in a public message). Its id is derived from its name
(SHA-256 of the name without case, NFKC), so "a name is unique" is the log's own rule: the
account's stream is created with expected version 0, and a second creation of the same name,
on any replica, finds the stream there (``VersionConflict``) and is refused with NAME_TAKEN.

A key is ``spk.<account id>.<secret>`` with 192 random bits of secret: it names its account (one
stream read to check it), the log keeps only its digest, compared in constant time. A key that
was rotated away or revoked is remembered by its digest, so it is refused as revoked, not as
unknown.

A CreateAccount or RotateKey with a client request id can be retried (docs/protocol.md,
"Request ids"): its key's secret is derived from the request id
(:mod:`spades_server.domain.tokens`), the row that records the call keeps the request id's SHA-256,
and a retry that finds that digest on the account answers with the same account and the same key,
appending nothing. A CreateAccount's request id is also claimed, write-once, in the log
(:data:`REQUEST_CLAIMS`, keyed by its digest, holding the account id it was sent for) before the
account's stream is appended to, so the same id sent for another name is refused with
REQUEST_ID_REUSED on every replica, and no second account is made.

The server's house bots play rated tables as accounts it makes itself (``house`` on their
creation row, :mod:`spades_server.processes.house_accounts`); names starting with "House " are kept
for them (:func:`check_not_reserved`).

>>> account_id_for("Alice") == account_id_for("  aLICE ".strip())
True
>>> account_of_key(new_key(account_id_for("Alice"))) == account_id_for("Alice")
True"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from dataclasses import dataclass, field

from spades.engine import Rules
from spades.manifest import manifest_problem, outside
from spades.reasons import Reason
from spades.v1 import account_pb2, cards_pb2, rating_pb2
from spades_server.domain import errors, tokens
from spades_server.domain.tables import timestamp

#: Every key starts with this, then the account id, then the secret, separated by dots.
KEY_PREFIX = "spk"


MAX_ACCOUNT_NAME = 32


#: Names starting with this (compared as names are) belong to the server's house bots.
RESERVED_PREFIX = "house "


KIND_NAMES = {account_pb2.ACCOUNT_KIND_BOT: "bot", account_pb2.ACCOUNT_KIND_PERSON: "person"}


def normalized_name(name: str) -> str:
    """The form names are compared in: NFKC, without case."""
    return unicodedata.normalize("NFKC", name).casefold()


def account_id_for(name: str) -> str:
    """The id of the account called ``name`` (any case): 80 bits of the name's SHA-256."""
    return hashlib.sha256(normalized_name(name).encode()).hexdigest()[:20]


def new_key(account_id: str, request_id: str = "", purpose: str = "") -> str:
    """A fresh key, or with ``request_id`` the one derived from it for ``purpose``
    (``tokens.KEY_BY_CREATE_ACCOUNT`` or ``tokens.KEY_BY_ROTATE_KEY``)."""
    if request_id:
        secret = tokens.request_key_secret(request_id, account_id, purpose)
    else:
        secret = secrets.token_urlsafe(24)
    return f"{KEY_PREFIX}.{account_id}.{secret}"


def account_of_key(key: str) -> str | None:
    """The account id a key names, or None when it is not shaped like a key."""
    prefix, _, rest = key.partition(".")
    account_id, separator, secret = rest.partition(".")
    if prefix != KEY_PREFIX or not separator or not account_id or len(secret) < 16:
        return None
    return account_id


# ---------------------------------------------------------------------------------- journal


@dataclass(frozen=True)
class AccountEntry:
    """One stored event of an account."""

    account_id: str
    sequence: int
    position: int
    recorded_at: float
    #: The public event, sequence and time set.
    message: account_pb2.AccountEvent
    #: KeyIssued: the digest of the key it issued.
    key_sha256: bytes = b""
    #: AccountCreated, KeyIssued: the digest of the client request id of the call that made it.
    request_id_sha256: bytes = b""
    #: AccountCreated: the server made the account for its house bots.
    house: bool = False
    #: AccountCreated by SignUp: the password's argon2id hash (spades_server.domain.passwords).
    password_hash: str = ""
    #: SessionStarted: the digest of the session's token.
    session_token_sha256: bytes = b""


@dataclass
class SessionRecord:
    """One session of a person (spades_server.domain.sessions), as the account's stream says."""

    session_id: str
    token_sha256: bytes
    created_at: float
    expires_at: float
    address: str
    ended: bool = False

    def to_proto(self, current: bool = False) -> account_pb2.Session:
        return account_pb2.Session(
            session_id=self.session_id,
            create_time=timestamp(self.created_at),
            expire_time=timestamp(self.expires_at),
            last_address=self.address,
            current=current,
            last_use_time=timestamp(self.created_at),  # until a use is recorded
        )


# ---------------------------------------------------------------------------------- aggregate


@dataclass
class Account:
    """One account, as its stream says."""

    account_id: str
    version: int = 0
    name: str = ""
    kind: account_pb2.AccountKind.ValueType = account_pb2.ACCOUNT_KIND_UNSPECIFIED
    created_at: float = 0.0
    #: The digest of the key that works now (empty once revoked).
    key_sha256: bytes = b""
    #: Digests of every key that worked once and no longer does.
    retired_key_digests: list[bytes] = field(default_factory=list)
    entries: list[AccountEntry] = field(default_factory=list)
    #: (pool, table id) of every rated match its stream was told of.
    rated_matches: set[tuple[str, str]] = field(default_factory=set)
    #: The digest of the request id of the CreateAccount that made it (empty: none).
    created_by_request: bytes = b""
    #: Each RotateKey with a request id, by the id's digest: the digest of the key it replaced.
    rotated_by_request: dict[bytes, bytes] = field(default_factory=dict)
    #: True for an account the server made for its house bots.
    house: bool = False
    #: A bot's rule-set manifest (None: none declared).
    manifest: account_pb2.RuleManifest | None = None
    #: (challenge id, True when the account made it) of every challenge its stream was told of,
    #: oldest first (spades_server.domain.challenges).
    challenges: list[tuple[str, bool]] = field(default_factory=list)
    #: (challenge id, who answered, accepted) of every answer its stream was told of, and the
    #: tables it was assigned: each is told once.
    challenge_answers: set[tuple[str, str, int]] = field(default_factory=set)
    assigned_tables: set[str] = field(default_factory=set)
    #: A bot made with CreateBot: the person account that owns it.
    owner_account_id: str = ""
    #: A person made with SignUp: the password's argon2id hash (empty: no password).
    password_hash: str = ""
    #: A person's sessions by id (ended ones too, so they are refused as revoked).
    sessions: dict[str, SessionRecord] = field(default_factory=dict)
    #: A person's bots (CreateBot), oldest first.
    bots: list[str] = field(default_factory=list)

    def fold(self, entry: AccountEntry) -> None:
        if entry.sequence <= self.version:
            return
        message = entry.message
        match message.WhichOneof("kind"):
            case "account_created":
                self.name = message.account_created.name
                self.kind = message.account_created.kind
                self.created_at = entry.recorded_at
                self.created_by_request = entry.request_id_sha256
                self.house = entry.house
                self.owner_account_id = message.account_created.owner_account_id
                self.password_hash = entry.password_hash
            case "session_started":
                started = message.session_started.session
                self.sessions[started.session_id] = SessionRecord(
                    started.session_id,
                    entry.session_token_sha256,
                    entry.recorded_at,
                    started.expire_time.ToNanoseconds() / 1e9,
                    started.last_address,
                )
            case "session_ended":
                ended = self.sessions.get(message.session_ended.session_id)
                if ended is not None:
                    ended.ended = True
            case "bot_created":
                if message.bot_created.account_id not in self.bots:
                    self.bots.append(message.bot_created.account_id)
            case "key_issued":
                if entry.request_id_sha256:
                    self.rotated_by_request[entry.request_id_sha256] = self.key_sha256
                self._retire_key()
                self.key_sha256 = entry.key_sha256
            case "key_revoked":
                self._retire_key()
            case "rating_changed":
                match = message.rating_changed.match
                self.rated_matches.add((match.pool, match.table_id))
            case "manifest_set":
                self.manifest = message.manifest_set.manifest
            case "table_assigned":
                self.assigned_tables.add(message.table_assigned.table_id)
            case "challenge_received" | "challenge_issued":
                outgoing = message.HasField("challenge_issued")
                made = message.challenge_issued if outgoing else message.challenge_received
                self.challenges.append((made.challenge.challenge_id, outgoing))
            case "challenge_answered":
                answer = message.challenge_answered
                self.challenge_answers.add((answer.challenge_id, answer.account_id, answer.state))
        self.entries.append(entry)
        self.version = entry.sequence

    def _retire_key(self) -> None:
        if self.key_sha256:
            self.retired_key_digests.append(self.key_sha256)
        self.key_sha256 = b""

    @property
    def bot(self) -> bool:
        return self.kind == account_pb2.ACCOUNT_KIND_BOT

    @property
    def revoked(self) -> bool:
        return not self.key_sha256

    def to_proto(self) -> account_pb2.Account:
        return account_pb2.Account(
            account_id=self.account_id,
            name=self.name,
            kind=self.kind,
            create_time=timestamp(self.created_at),
            key_revoked=self.revoked,
            manifest=self.manifest,
            owner_account_id=self.owner_account_id,
        )

    def used_request(self, request_digest: bytes) -> bool:
        """Whether a call with this request id's digest made or changed the account."""
        return bool(request_digest) and (
            request_digest == self.created_by_request or request_digest in self.rotated_by_request
        )

    def check_key(self, key: str, retried_rotation: bytes = b"") -> None:
        """UNAUTHENTICATED unless ``key`` is the account's key now (KEY_REVOKED for an old one).
        With ``retried_rotation`` (a RotateKey's request id digest) the key that rotation
        replaced is accepted too: its retry is answered with the key it issued."""
        if self.key_sha256 and tokens.matches(key, self.key_sha256):
            return
        replaced = self.rotated_by_request.get(retried_rotation, b"") if retried_rotation else b""
        if replaced and tokens.matches(key, replaced):
            return
        # Every retired digest is compared (constant time each): no early exit says which.
        retired = [tokens.matches(key, digest) for digest in self.retired_key_digests]
        if any(retired):
            raise errors.refuse(
                Reason.KEY_REVOKED,
                "this key was revoked or replaced by a newer one, so it no longer works",
            )
        raise key_not_valid()


def key_not_valid() -> errors.RequestError:
    return errors.refuse(Reason.KEY_NOT_VALID, "this account key is not valid")


def account_not_found(what: str) -> errors.RequestError:
    return errors.refuse(Reason.ACCOUNT_NOT_FOUND, f"there is no account {what}")


# ---------------------------------------------------------------------------------- decisions


@dataclass(frozen=True)
class AccountDecided:
    """Events to append to an account's stream, each with the digest of the key it issued and
    of the request id of the call that made it (each empty when there is none); ``house`` marks
    a creation the server made for its house bots."""

    events: list[tuple[account_pb2.AccountEvent, bytes, bytes]]
    house: bool = False
    #: The argon2id hash of a SignUp's password, kept beside its AccountCreated.
    password_hash: str = ""
    #: The digest of a session's token, kept beside its SessionStarted.
    session_token_sha256: bytes = b""


def check_account_name(name: str) -> str:
    """The name without surrounding spaces, or INVALID_ARGUMENT with its reason code."""
    cleaned = name.strip()
    if not cleaned:
        raise errors.refuse(Reason.MISSING_FIELD, "the account name is required")
    if len(cleaned) > MAX_ACCOUNT_NAME:
        raise errors.refuse(
            Reason.FIELD_TOO_LONG,
            f"the account name has {len(cleaned)} characters; at most {MAX_ACCOUNT_NAME}",
        )
    if not cleaned.isprintable():
        raise errors.refuse(
            Reason.INVALID_NAME, "the account name must be printable characters only"
        )
    return cleaned


def check_not_reserved(name: str) -> None:
    """INVALID_ARGUMENT (NAME_RESERVED) for a name kept for the server's house bots."""
    if normalized_name(name).startswith(RESERVED_PREFIX):
        raise errors.refuse(
            Reason.NAME_RESERVED,
            "names starting with 'House ' are the server's, for its house bots; choose another",
            field="name",
        )


def check_kind(kind: int) -> account_pb2.AccountKind.ValueType:
    if kind not in KIND_NAMES:
        why = "say whether the account is a bot or a person (kind)"
        if not kind:
            raise errors.refuse(Reason.MISSING_FIELD, why, field="kind")
        raise errors.refuse(Reason.UNKNOWN_ACCOUNT_KIND, why, field="kind")
    return account_pb2.AccountKind.ValueType(kind)


def decide_creation(
    name: str,
    kind: account_pb2.AccountKind.ValueType,
    key: str,
    request_digest: bytes = b"",
    owner_account_id: str = "",
) -> AccountDecided:
    """A new account and its first key (none when ``key`` is empty); ``owner_account_id``:
    a bot a person made."""
    created = account_pb2.AccountCreated(name=name, kind=kind, owner_account_id=owner_account_id)
    events = [(account_pb2.AccountEvent(account_created=created), b"", request_digest)]
    if key:  # a person made by SignUp signs in with its password and has no key yet
        issued = account_pb2.AccountEvent(key_issued=account_pb2.KeyIssued())
        events.append((issued, tokens.digest(key), b""))
    return AccountDecided(events)


def decide_house_creation(name: str) -> AccountDecided:
    """A house-bot account: a bot, marked as the house's, with no key (the server seats it
    itself; the operator may issue one with RotateKey)."""
    created = account_pb2.AccountCreated(name=name, kind=account_pb2.ACCOUNT_KIND_BOT)
    return AccountDecided(
        [(account_pb2.AccountEvent(account_created=created), b"", b"")], house=True
    )


def request_claim_key(request_digest: bytes) -> str:
    """The claim key of a CreateAccount's request id (by its digest) in :data:`REQUEST_CLAIMS`."""
    return "create/" + request_digest.hex()


def request_id_reused() -> errors.RequestError:
    return errors.refuse(
        Reason.REQUEST_ID_REUSED, "this request_id was used for another call; send a fresh one"
    )


def created_before(account: Account, request_digest: bytes) -> bool:
    """Whether a CreateAccount with this request id's digest made ``account`` (REQUEST_ID_REUSED
    when the id changed the account otherwise)."""
    if not request_digest:
        return False
    if request_digest == account.created_by_request:
        return True
    if account.used_request(request_digest):
        raise request_id_reused()
    return False


def decide_rotation(
    account: Account,
    key: str,
    *,
    by_operator: bool,
    request_digest: bytes = b"",
    by_owner: bool = False,
) -> AccountDecided | None:
    """A new key; only the operator, or a bot's owner (or a person signed in with a session, as
    its own owner), may issue one to an account whose key was revoked. Nothing when the rotation
    with this request id's digest is already on the account (a retry)."""
    if request_digest in account.rotated_by_request:
        return None
    if request_digest and account.used_request(request_digest):
        raise request_id_reused()
    if account.revoked and not (by_operator or by_owner):
        raise errors.refuse(
            Reason.KEY_REVOKED,
            "this account's key was revoked; only the operator can issue a new one",
        )
    issued = account_pb2.KeyIssued(by_operator=by_operator, by_owner=by_owner)
    return AccountDecided(
        [(account_pb2.AccountEvent(key_issued=issued), tokens.digest(key), request_digest)]
    )


def decide_revocation(
    account: Account, *, by_operator: bool, by_owner: bool = False
) -> AccountDecided | None:
    """Revoke the key (nothing to do when it is already revoked)."""
    if account.revoked:
        return None
    revoked = account_pb2.KeyRevoked(by_operator=by_operator, by_owner=by_owner)
    return AccountDecided([(account_pb2.AccountEvent(key_revoked=revoked), b"", b"")])


def decide_rating_change(account: Account, match: rating_pb2.MatchRated) -> AccountDecided | None:
    """Tell the account of a rated match (once: nothing when its stream has it already)."""
    if (match.pool, match.table_id) in account.rated_matches:
        return None
    changed = account_pb2.RatingChanged(match=match)
    return AccountDecided([(account_pb2.AccountEvent(rating_changed=changed), b"", b"")])


def decide_assignment(
    table_id: str, seats: list[cards_pb2.Seat.ValueType], rated: bool
) -> AccountDecided:
    """Tell the account the quick-match queue seated it."""
    assigned = account_pb2.TableAssigned(table_id=table_id, seats=seats, rated=rated)
    return AccountDecided([(account_pb2.AccountEvent(table_assigned=assigned), b"", b"")])


def decide_manifest(account: Account, manifest: account_pb2.RuleManifest) -> AccountDecided:
    """Declare (replace) a bot's rule-set manifest: a person plays any rules."""
    if not account.bot:
        raise errors.refuse(
            Reason.MANIFEST_FOR_BOTS,
            "only a bot declares a rule-set manifest; a person plays any rules",
        )
    problem = manifest_problem(manifest)
    if problem is not None:
        raise errors.refuse(Reason.INVALID_MANIFEST, problem, field="manifest")
    declared = account_pb2.ManifestSet(manifest=manifest)
    return AccountDecided([(account_pb2.AccountEvent(manifest_set=declared), b"", b"")])


def check_declared(account: Account, rules: Rules) -> None:
    """FAILED_PRECONDITION (RULES_NOT_DECLARED) when ``account`` is a bot whose manifest does
    not declare ``rules`` (a person plays any rules)."""
    if not account.bot:
        return
    missing = outside(account.manifest, rules)
    if missing:
        declared = "its manifest" if account.manifest is not None else "the default rules only"
        raise errors.refuse(
            Reason.RULES_NOT_DECLARED,
            f"{account.name} does not declare these rules ({declared}): {', '.join(missing)}",
            metadata={"account_id": account.account_id},
        )
