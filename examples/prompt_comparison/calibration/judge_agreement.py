"""The capital judge on answers a person labelled: run with `niceeval calibrate calibration/`."""

from niceeval import define_eval


@define_eval(cases="judge_labels.yaml", tags=["calibration"])
def judge_agrees(t):
    t.judge.rubric(
        "The answer names the correct capital of {country}.",
        on=t.case["output"],
        rubric_prompt="../evals/graders/capital.txt",
    )
