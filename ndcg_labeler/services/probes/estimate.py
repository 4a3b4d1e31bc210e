"""The estimate shown before a probe starts: "about 450 questions, ~$0.52", and its basis.

From the judge's earlier probe answers on the set under its current prompt version when they
reported tokens (their mean input and output tokens); otherwise from the rendered variants of
a few of the pairs (4 characters a token) with the judge's max_tokens as output: an upper
bound, since most answers are shorter.
"""

from __future__ import annotations

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judge, Probe, ProbeAnswer, TestSet
from ndcg_labeler.services import judge_costs, judges
from ndcg_labeler.services.probes.run import PER_PAIR, check_probe, pair_questions, probe_pairs

SAMPLE_PAIRS = 3  # pairs whose variants are rendered for a prompt-length estimate
CHARS_PER_TOKEN = 4.0


def estimate_probe(test_set: TestSet, judge: Judge, n: int) -> judge_costs.Estimate:
    """What a probe of N pairs would ask (questions) and cost, and on what basis."""
    check_probe(judge, n)
    pairs, _ = probe_pairs(test_set, n)
    questions = len(pairs) * PER_PAIR
    with judges.Asker(judge) as asker:
        pa = ProbeAnswer
        count, mean_in, mean_out = db.session.execute(
            sa.select(
                sa.func.count(), sa.func.avg(pa.prompt_tokens), sa.func.avg(pa.completion_tokens)
            )
            .join(Probe, Probe.id == pa.probe_id)
            .where(
                Probe.test_set_id == test_set.id,
                Probe.judge_id == judge.id,
                Probe.prompt_sha256 == asker.sha,
                pa.prompt_tokens > 0,
            )
        ).one()
        render_error = ""
        if count:
            basis, answers = "seen", int(count)
            per_in, per_out = float(mean_in), float(mean_out or 0)
        else:
            _, prompts = pair_questions(test_set, asker, pairs[:SAMPLE_PAIRS])
            lengths = [len(p) for p in prompts if isinstance(p, str)]
            basis, answers = "prompt", len(lengths)
            render_error = judge_costs.first_render_error(prompts)
            per_in = sum(lengths) / len(lengths) / CHARS_PER_TOKEN if lengths else 0.0
            per_out = float(judge.max_tokens) if lengths else 0.0
    db.session.commit()  # the prompt version, stored once
    tokens_in, tokens_out = round(per_in * questions), round(per_out * questions)
    return judge_costs.Estimate(
        questions,
        tokens_in,
        tokens_out,
        judge.cost(tokens_in, tokens_out),
        basis,
        answers,
        judge.max_tokens,
        unit="question",
        detail=f"({judge_costs.counted(len(pairs), 'pair')}, {PER_PAIR} variants each)",
        render_error=render_error,
    )
