"""Panel link parameters and the completion redirect template: what is kept, and how values are encoded."""

from __future__ import annotations

import pytest

from app.panels import (
    PANEL_PRESETS,
    PanelConfig,
    check_redirect_template,
    fill_redirect,
    panel_values,
    redirect_placeholders,
)

SURVEY = PanelConfig(name="the survey", parameters=["rid", "src"], id_parameter="rid")


def test_panel_values_keep_only_the_configured_parameters_as_sent() -> None:
    arrived = panel_values(SURVEY, {"rid": "  R_1 ", "src": "", "other": "x"})
    assert arrived.values == {"rid": "R_1"} and arrived.participant_code == "R_1"
    assert arrived.problems == ()
    assert panel_values(None, {"rid": "R_1"}).values == {}


def test_panel_values_report_overlong_and_control_characters_instead_of_cutting() -> None:
    arrived = panel_values(SURVEY, {"rid": "r" * 201, "src": "a\nb"})
    assert arrived.values == {} and arrived.participant_code is None
    assert arrived.problems == ("rid", "src")


def test_presets_name_the_panels_parameters_and_id() -> None:
    prolific, mturk = PANEL_PRESETS["prolific"], PANEL_PRESETS["mturk"]
    assert (prolific.parameters, prolific.id_parameter) == (
        ["PROLIFIC_PID", "STUDY_ID", "SESSION_ID"],
        "PROLIFIC_PID",
    )
    assert (mturk.parameters, mturk.id_parameter) == (["workerId", "assignmentId", "hitId"], "workerId")


@pytest.mark.parametrize(
    ("template", "values", "expected"),
    [
        (
            "https://p.org/done?cc={completion_code}",
            {"completion_code": "AB-12"},
            "https://p.org/done?cc=AB-12",
        ),
        (
            "https://p.org/done?a={rid}&b={src}",
            {"rid": "x&y=z", "src": None},
            "https://p.org/done?a=x%26y%3Dz&b=",
        ),
        ("https://p.org/d?u={rid}#f={rid}", {"rid": "/#?"}, "https://p.org/d?u=%2F%23%3F#f=%2F%23%3F"),
        ("https://p.org/d?u={rid}", {"rid": "é ü"}, "https://p.org/d?u=%C3%A9%20%C3%BC"),
        ("https://p.org/static", {"rid": "x"}, "https://p.org/static"),
    ],
)
def test_fill_redirect_encodes_every_value(
    template: str, values: dict[str, str | None], expected: str
) -> None:
    assert fill_redirect(template, values) == expected


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("https://{rid}.p.org/?x=1", "only appear after the ?"),
        ("https://p.org/{rid}?x=1", "only appear after the ?"),
        ("https://p.org/?x={nope}", "unknown placeholder {nope}"),
        ("https://p.org/?x={}", "unknown placeholder {}"),
        ("https://p.org/?x=}", "must enclose a placeholder"),
        ("data:text/html,hi?{rid}", "https:// or http://"),
        ("//p.org/?x={rid}", "https:// or http://"),
        ("https:///?x=1", "https:// or http://"),
        ("https://p.org/a b", "may not contain spaces"),
        ("https://p.org\\@evil.org/", "may not contain spaces"),
        ('https://p.org/?a="x"', "may not contain spaces"),
        ("https://p.org/?a=<b>", "may not contain spaces"),
        ("https://p.org/?a=\x7f", "may not contain spaces"),
    ],
)
def test_check_redirect_template_refuses_with_the_reason(template: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("?", r"\?").replace("{", r"\{").replace("}", r"\}")):
        check_redirect_template(template, redirect_placeholders(SURVEY))


def test_check_redirect_template_accepts_the_panels_parameters() -> None:
    template = "https://p.org/end?code={completion_code}&who={participant_code}&r={rid}&s={src}"
    assert check_redirect_template(template, redirect_placeholders(SURVEY)) == template
