"""The profile, the requirements and the steps agree on the machine, for every claim at every scale.

For each claim that runs live and each of its scales: the system of the image its CloudLab profile asks for
(`reprobook cloudlab profile CLAIM --scale S`) is one its requirements accept (so the host check lets such a node
through) and one every package step of the role installs for (its packages table has that release's row), and
every step that installs Debian or Ubuntu packages names them in such a table. A rehearsal asks for an image too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reprobook import cloudlab
from reprobook.core.config import load_paper, load_project
from reprobook.core.requirements import os_matches
from reprobook.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
PROJECT = load_project(ROOT)
CASES = [(c.key, s) for c in cloudlab.live_claims(PROJECT) for s in (c.scales or {"paper": None})]


@pytest.mark.parametrize(("key", "scale"), CASES, ids=[f"{k}@{s}" for k, s in CASES])
def test_the_profiles_image_is_one_the_requirements_accept_and_the_steps_install_for(key, scale):
    claim = PROJECT.claim(key)
    at = claim.at_scale(scale if claim.scales else None)
    steps = [s for s in at.setup + at.run if s.where != "guest"]
    for s in steps:   # one table of package names per release, used by the step
        if re.search(r"\brb_apt_install\b", s.run):
            assert s.packages and "rb_packages" in s.run, f"{s.name!r} installs packages without a packages table"
    for rn in cloudlab.nodes_for_claim(PROJECT, claim, scale or "paper"):
        reqs = at.role(rn.role).requires or at.requires
        wanted = tuple(reqs.get("os") or ())
        mine = [s for s in steps if s.packages and (s.role or at.control_role) == rn.role]
        if not wanted and not mine:
            continue   # a machine the guide assumes prepared (Ozz): no image and nothing installed
        if not wanted and (key, scale) == ("ozz/lmbench-overhead", "paper"):
            # the authors' prepared server (no stock image): its one packaged step makes the Debian guest of
            # guest=debian, the rehearsal's guest, and exits at once with Ozz's own guest (the paper's default)
            assert [s.name for s in mine] == [s.name for s in steps if s.name.startswith("guest=debian:")]
            continue
        system = cloudlab.os_of_image(rn.disk_image)
        assert system, f"{key} at {scale}: the {rn.role} nodes get no standard image ({rn.disk_image!r}; os {wanted})"
        family, _, release = system.partition(" ")
        assert any(os_matches(w, family, release) for w in wanted), (key, scale, rn.role, system, wanted)
        for s in mine:
            assert system in s.releases, f"{key} at {scale}: {s.name!r} has no row for {system} ({s.releases})"


def test_a_rehearsal_asks_for_an_image_it_supports():
    nodes = cloudlab.nodes_for_claim(PROJECT, PROJECT.claim("pesto/sample-runs"), "rehearsal")
    assert {cloudlab.os_of_image(rn.disk_image) for rn in nodes} == {"Ubuntu 22.04"}


def test_a_role_that_accepts_a_release_its_steps_do_not_install_for_is_refused_when_the_paper_loads(tmp_path):
    src = (ROOT / "configs" / "papers" / "pesto.yaml").read_text()
    bad = src.replace('    os: ["Debian 12", "Ubuntu 22.04"]\n    memory_gib: 3',
                      '    os: ["Debian 12", "Ubuntu 22.04", "Ubuntu 20.04"]\n    memory_gib: 3', 1)
    assert bad != src
    (tmp_path / "papers").mkdir()
    (tmp_path / "patches").symlink_to(ROOT / "configs" / "patches")
    (tmp_path / "papers" / "pesto.yaml").write_text(bad)
    with pytest.raises(ConfigError) as err:
        load_paper(tmp_path / "papers" / "pesto.yaml")
    msg = str(err.value)
    assert "installs packages for Debian 12 and Ubuntu 22.04 only" in msg and "Ubuntu 20.04" in msg, msg
    assert "role 'control'" in msg and "add a row for Ubuntu 20.04" in msg, msg


# what CloudLab's stock Ubuntu images have before any step runs (the host check comes first, so a command it asks
# for must be one of these, or be installed by a step and checked there)
STOCK_COMMANDS = {"git", "python3", "ssh", "ssh-keygen", "rsync", "tar", "sudo", "bash"}   # ssh-keygen: openssh-client, as ssh


@pytest.mark.parametrize(("key", "scale"), CASES, ids=[f"{k}@{s}" for k, s in CASES])
def test_the_host_check_asks_only_for_what_a_stock_image_has(key, scale):
    claim = PROJECT.claim(key)
    at = claim.at_scale(scale if claim.scales else None)
    for role in at.roles or (at.control_role,):
        wanted = set((at.role(role).requires or at.requires).get("commands") or ())
        assert wanted <= STOCK_COMMANDS, (f"{key} at {scale}: the host check of role {role!r} asks for "
                                          f"{sorted(wanted - STOCK_COMMANDS)}, which the plan installs only later")
