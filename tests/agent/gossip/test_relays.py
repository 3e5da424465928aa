"""The relay rule: with member certificates, only a member's own agent speaks for it.

grstats' own rule (:mod:`grstats.agent.gossip.relays`): GR itself has no relays, each member
hears each other's stats directly (``Pipeline_stats_member_message``, pipeline_stats.cc), so
there is no MySQL source to follow; the stamps are scuttlebutt's (:mod:`.updates`).
"""

from __future__ import annotations

import dataclasses

from grstats.agent.gossip import GossipState, Key, RelayRule, Stamp, Update
from grstats.agent.gossip.relays import INCARNATION_AHEAD_US, VERSIONS_PER_S, Direct
from tests.agent.gossip.test_state import SECOND, A, B, C, counts, view

RULE = RelayRule(direct_window_us=2 * SECOND)
START = 1_000 * SECOND  # the members' agents started here (their incarnation)


def member_b() -> GossipState:
    """Member B's agent, started at START, seeing A, B and C, with its first counts."""
    state = GossipState(B, incarnation=START)
    state.record_local(Key.VIEW, view(A, B, C), START)
    state.record_local(Key.COUNTS, counts(B, 1), START)
    return state


def receiver() -> GossipState:
    """Member A's agent, with the rule, that heard B's agent directly at START."""
    state = GossipState(A, incarnation=START)
    state.relays = RULE
    state.record_local(Key.VIEW, view(A, B, C), START)
    state.merge(member_b().updates_for({}), START, via="b:7400", speaker=B)
    return state


def forged(version: int, checked: int = 666) -> Update:
    """B's counts as a forger relays them: incarnation START, ``version``."""
    return Update(B, Stamp(START, version), Key.COUNTS, counts(B, checked), START)


class TestAdmits:
    def test_member_heard_directly_within_the_window_is_spoken_for_by_its_agent_only(
        self,
    ) -> None:
        """Within the window no relay is admitted, at any stamp; after it, one just above is."""
        direct = Direct(Stamp(START, 5), START)
        assert not RULE.admits(direct, Stamp(START, 6), START + 2 * SECOND)
        assert RULE.admits(direct, Stamp(START, 6), START + 2 * SECOND + 1)

    def test_version_is_bounded_by_what_the_member_could_make_since(self) -> None:
        """A relay of the run heard directly may be VERSIONS_PER_S a second ahead, not more."""
        direct = Direct(Stamp(START, 5), START)
        now = START + 10 * SECOND
        most = 5 + VERSIONS_PER_S * 11  # 10 s elapsed, plus the second begun
        assert RULE.admits(direct, Stamp(START, most), now)
        assert not RULE.admits(direct, Stamp(START, most + 1), now)

    def test_a_new_run_counts_from_when_the_old_one_was_heard(self) -> None:
        """A later incarnation's versions count from 0 since the member was last heard."""
        direct = Direct(Stamp(START, 500), START)
        now = START + 10 * SECOND
        later = START + SECOND
        assert RULE.admits(direct, Stamp(later, VERSIONS_PER_S * 11), now)
        assert not RULE.admits(direct, Stamp(later, VERSIONS_PER_S * 11 + 1), now)

    def test_an_earlier_run_than_the_one_heard_is_refused(self) -> None:
        """A relay of an incarnation below the one its own agent spoke for is old news."""
        assert not RULE.admits(
            Direct(Stamp(START, 5), START), Stamp(START - 1, 1), START + 9 * SECOND
        )

    def test_never_heard_member_is_bounded_by_its_incarnation(self) -> None:
        """Never heard directly: an incarnation not past the clock (and skew), versions since it."""
        now = START + 10 * SECOND
        since_start = VERSIONS_PER_S * (1 + (10 * SECOND + INCARNATION_AHEAD_US) // SECOND)
        assert RULE.admits(None, Stamp(START, since_start), now)
        assert not RULE.admits(None, Stamp(START, since_start + 1), now)
        assert RULE.admits(None, Stamp(now + INCARNATION_AHEAD_US, 0), now)
        assert not RULE.admits(None, Stamp(now + INCARNATION_AHEAD_US + 1, 0), now)


class TestMerge:
    def test_relays_of_a_member_heard_directly_are_unproven(self) -> None:
        """A forger's answer outbidding B while B's agent is heard is refused and counted."""
        state = receiver()
        held = state.value(B, Key.COUNTS)
        result = state.merge([forged(10**6)], START + SECOND, via="forger:7400")
        assert (result.accepted, result.stale, result.unproven) == (0, 0, 1)
        assert state.value(B, Key.COUNTS) == held

    def test_without_the_rule_relays_go_by_stamp(self) -> None:
        """Without member certificates (no rule) the highest stamp wins, as before."""
        state = receiver()
        state.relays = None
        assert state.merge([forged(10**6)], START + SECOND, via="forger:7400").accepted == 1

    def test_a_value_heard_directly_replaces_a_relay_whatever_their_stamps(self) -> None:
        """B's own counts replace a higher relayed stamp; the origin's stamp comes down to it."""
        state = receiver()
        at = START + 3 * SECOND  # past the window: relays of B are admitted
        assert state.merge([forged(50)], at, via="forger:7400").accepted == 1
        assert state.origins[B].stamp == Stamp(START, 50)
        own = Update(B, Stamp(START, 7), Key.COUNTS, counts(B, 7), at)
        assert state.merge([own], at + 1, via="b:7400", speaker=B).accepted == 1
        heard = state.value(B, Key.COUNTS)
        assert heard is not None
        assert heard.direct
        assert heard.update.stamp == Stamp(START, 7)
        assert state.origins[B].stamp == Stamp(START, 7)
        direct = state.origins[B].direct
        assert direct is not None
        assert direct.at_us == at + 1
        # a replay of B's own older value is still stale: only relays give way
        older = dataclasses.replace(own, stamp=Stamp(START, 6))
        assert state.merge([older], at + 2, via="b:7400", speaker=B).stale == 1

    def test_speaker_proves_only_its_own_values(self) -> None:
        """A message proven to be B's makes B's values direct, not C's it might carry."""
        state = receiver()
        c_counts = Update(C, Stamp(START, 1), Key.COUNTS, counts(C, 1), START)
        assert state.merge([c_counts], START + SECOND, via="b:7400", speaker=B).accepted == 1
        heard = state.value(C, Key.COUNTS)
        assert heard is not None
        assert not heard.direct
        assert state.origins[C].direct is None
