"""The GitHub Pages workflow builds the book with the project's own command and publishes _build/html."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "pages.yml"


def _workflow():
    return yaml.safe_load(WORKFLOW.read_text())


def _steps(job):
    return _workflow()["jobs"][job]["steps"]


def _uses(step, action):
    return step.get("uses", "").split("@")[0] == action


def test_runs_on_pushes_to_main():
    triggers = _workflow()[True]  # YAML 1.1 reads the key `on` as True
    assert triggers["push"]["branches"] == ["main"]


def test_builds_with_the_project_command_and_uploads_the_built_html():
    steps = _steps("build")
    assert any(_uses(s, "actions/checkout") for s in steps)
    commands = [s["run"].strip() for s in steps if "run" in s]
    assert "make build-book" in commands, f"the book is not built with `make build-book`: {commands}"
    uploads = [s for s in steps if _uses(s, "actions/upload-pages-artifact")]
    assert len(uploads) == 1 and uploads[0]["with"]["path"] == "_build/html"
    assert steps.index(uploads[0]) > next(i for i, s in enumerate(steps) if s.get("run", "").strip() == "make build-book")


def test_deploys_the_uploaded_artifact_with_pages_permissions():
    workflow = _workflow()
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert any(_uses(s, "actions/deploy-pages") for s in deploy["steps"])
    assert workflow["permissions"]["pages"] == "write" and workflow["permissions"]["id-token"] == "write"


def test_repository_url_is_set_only_in_the_book_config():
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    text = WORKFLOW.read_text()
    owner_repo = url.removeprefix("https://github.com/")
    assert owner_repo not in text and url not in text, "the workflow hard-codes the repository URL"


def test_publishes_the_editions_on_the_branch_the_colab_buttons_open():
    """`make editions` runs after the build; its output goes, whole, to the branch named in _config.yml
    (read by scripts/editions.py --branch, so the workflow names no branch itself)."""
    steps = _steps("build")
    commands = [s.get("run", "").strip() for s in steps]
    assert commands.index("make editions") > commands.index("make build-book")
    named = next(s for s in steps if "scripts/editions.py --branch" in s.get("run", ""))
    assert _workflow()["jobs"]["build"]["outputs"]["editions_branch"] == f"${{{{ steps.{named['id']}.outputs.branch }}}}"
    uploaded = next(s for s in steps if _uses(s, "actions/upload-artifact"))
    assert uploaded["with"]["path"] == "_build/colab"
    job = _workflow()["jobs"]["editions"]
    assert job["needs"] == "build" and job["permissions"]["contents"] == "write"
    publish = next(s for s in job["steps"] if _uses(s, "peaceiris/actions-gh-pages"))
    downloaded = next(s for s in job["steps"] if _uses(s, "actions/download-artifact"))
    assert downloaded["with"]["name"] == uploaded["with"]["name"]
    assert publish["with"]["publish_dir"] == downloaded["with"]["path"]
    assert publish["with"]["publish_branch"] == "${{ needs.build.outputs.editions_branch }}"
    branch = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]["html_theme_options"]["repository_branch"]
    assert branch != "main" and f": {branch}" not in WORKFLOW.read_text()
