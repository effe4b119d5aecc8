"""Label selectors with apimachinery's grammar and semantics (``kubectl get -l``)."""

from __future__ import annotations

import pytest

from trainjob.core import selectors

LABELS = {"team": "ml", "env": "dev", "app.kubernetes.io/name": "trainjob"}


@pytest.mark.parametrize(
    ("selector", "want"),
    [
        pytest.param("", True, id="empty selects everything"),
        pytest.param("team=ml", True, id="equals"),
        pytest.param("team==ml", True, id="double equals"),
        pytest.param("team=infra", False, id="another value"),
        pytest.param("team!=infra", True, id="not equal"),
        pytest.param("missing!=x", True, id="not equal holds for an absent label"),
        pytest.param("team in (ml, infra)", True, id="in"),
        pytest.param("team notin (ml)", False, id="notin"),
        pytest.param("missing notin (a)", True, id="notin holds for an absent label"),
        pytest.param("team", True, id="exists"),
        pytest.param("!team", False, id="does not exist"),
        pytest.param("!missing", True, id="absent"),
        pytest.param("team=ml,env=dev", True, id="every requirement holds"),
        pytest.param("team=ml,env=prod", False, id="one fails"),
        pytest.param("app.kubernetes.io/name=trainjob", True, id="a prefixed key"),
        pytest.param("team in (ml,infra),env", True, id="a set, then a comma"),
    ],
)
def test_matches(selector: str, want: bool) -> None:
    assert selectors.matcher(selector)(LABELS) is want


@pytest.mark.parametrize("bad", ["a=b=c", "team in ()", "=x", "team in (a", "a b"])
def test_bad_selectors_name_the_requirement(bad: str) -> None:
    with pytest.raises(ValueError, match="unable to parse requirement"):
        selectors.parse(bad)
