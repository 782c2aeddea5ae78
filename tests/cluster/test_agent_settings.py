"""The settings a pool across hosts hands each host's agent (gpu_backend.multihost.cluster
AGENT_SETTINGS), without Ray: the agent makes its PoolSettings from them over its host's
own, as AgentActor does."""

from __future__ import annotations

from gpu_backend.config import PoolSettings
from gpu_backend.multihost.cluster import AGENT_SETTINGS


def test_an_agent_is_handed_every_setting_its_arbiter_follows():
    """An agent's arbiter is made from the settings the pool hands it (AGENT_SETTINGS, over
    the agent host's own defaults): a pool whose share settings are not the defaults gets
    the same policy and company options on every host."""
    ours = PoolSettings(policy="share", quantum_ms=3.0, period_ms=30.0, share_window_ms=6.0,
                        share_fill=True, share_deep_lead_ms=8.0, share_light_gap_ms=5.0,
                        share_gap_charge_ms=2.0, share_forget_idle_ms=70.0,
                        share_assume_silent=False, company_idle_ms=500.0,
                        share_light_company=False, share_deep_company=False,
                        share_anticipate_batch_ms=20.0,
                        preempt_patience_ms=7.0,
                        patience_by_op=False, gap_rule=False)
    agents = PoolSettings(**{k: getattr(ours, k) for k in AGENT_SETTINGS})
    assert agents.policy_options() == ours.policy_options() != PoolSettings().policy_options()
    assert agents.company_options() == ours.company_options() != PoolSettings().company_options()
