"""A newcomer follows the README, from a fresh install to the inspector in a browser.

The commands are read from the README itself: the shell blocks of "Set up" and "Give an agent a
memory" run in order, each ``.venv/bin/pip install -e ...`` as a fresh environment holding exactly
that install (made from a wheel of this tree, see ``fresh_venv``), each ``.venv/bin/cogitator-memory
...`` in it, with ``HOME`` and ``$COGITATOR_HOME`` in the test's folder, so all of them share one
store there, the README's ``~/.cogitator/memory.db``. What each command prints is checked. Then, as
the README goes on: ``cogitator-memory mcp`` is started over stdio and driven by the official MCP
SDK's client (in this process), ``cogitator-memory serve`` is started and the URL it prints is
opened in headless Chromium (``browser_helpers``), and the README's Python blocks run on each
install. A command of the README this test does not know how to follow fails it.
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from fresh_venv import PACKAGE, ROOT, Venvs, built_wheel, clean_env, shared_venvs, venv_python
from test_docs import BLOCK

sys.path.insert(0, str(Path(__file__).resolve().parent / "server"))
from browser_helpers import chromium, shot, watch_errors
from server_helpers import free_port, read_lines

README = ROOT / "README.md"
SHELL_BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
#: What the README tells a developer, not a newcomer (the test suite itself).
DEVELOPER_COMMANDS = {"bash scripts/test.sh"}
#: The README's sections a newcomer follows, in order.
SET_UP, AGENT, QUICK_START = "Set up", "Give an agent a memory", "Quick start: threads"
#: What the README's Python blocks print: the headline search finds the allergy.
PYTHON_OUTPUT = ["I'm allergic to peanuts.", "entries on every branch"]
SERVE = re.compile(r"`\.venv/bin/cogitator-memory (serve[^`]*)`")
SERVING = re.compile(r"^serving the memory at (http://127\.0\.0\.1:(\d+)/\?token=(\S+)) \(Ctrl-C stops\)$")


def section(title: str) -> str:
    """The text of the README's ``## title`` section."""
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def commands(title: str) -> list[list[str]]:
    """The commands of the section's shell blocks, in order (``a && b`` is two)."""
    found: list[list[str]] = []
    for block in SHELL_BLOCK.findall(section(title)):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            while words:
                cut = words.index("&&") if "&&" in words else len(words)
                found.append(words[:cut])
                words = words[cut + 1 :]
    return [c for c in found if shlex.join(c) not in DEVELOPER_COMMANDS]


def install(words: list[str]) -> tuple[str, ...] | None:
    """``.venv/bin/pip install -e .[extras]`` as the requirement of this tree's package."""
    if words[:3] != [".venv/bin/pip", "install", "-e"] or len(words) != 4:
        return None
    found = re.fullmatch(r"\.(\[[\w,]+\])?", words[3])
    return (f"{PACKAGE}{found.group(1) or ''}",) if found else None


def kind(words: list[str]) -> str:
    """What a newcomer's command is, or a failure naming the command the test cannot follow."""
    if words == ["python3", "-m", "venv", ".venv"]:
        return "venv"
    if install(words) is not None:
        return "install"
    if words[:1] == [".venv/bin/cogitator-memory"] and len(words) > 1 and words[1] in {*EXPECTED, *SERVERS}:
        return words[1]
    pytest.fail(f"the README asks a newcomer to run {shlex.join(words)!r}: teach test_newcomer.py to follow it")


@dataclass
class Newcomer:
    """A newcomer's machine: a folder to work in, the home folder, and ``.venv`` once installed."""

    venvs: Venvs
    folder: Path
    venv: Path | None = None
    remembered: list[str] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return self.folder / "home" / ".cogitator"

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in clean_env().items() if not k.startswith(("COGITATOR_", "COGMEM_"))}
        return {**env, "HOME": str(self.folder / "home"), "COGITATOR_HOME": str(self.home), "COLUMNS": "200"}

    @property
    def work(self) -> Path:
        work = self.folder / "clone"
        work.mkdir(parents=True, exist_ok=True)
        return work

    def command(self) -> Path:
        assert self.venv is not None, "the README runs cogitator-memory before installing it"
        return self.venv / "bin" / "cogitator-memory"

    def install(self, words: list[str]) -> None:
        reqs = install(words)
        assert reqs is not None
        self.venv = self.venvs.get(reqs)
        # None of the README's installs brings an embedding model.
        check = "from cogitator_memory.runtime.config import local_model_installed as f; print(f())"
        done = self.python(["-c", check])
        assert done.stdout.strip() == "False", f"{shlex.join(words)} installs an embedding model"

    def python(self, args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        assert self.venv is not None
        done = subprocess.run(
            [str(venv_python(self.venv)), *args],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=cwd or self.work,
            env=self.env,
        )
        assert done.returncode == 0, f"python {shlex.join(args)} failed:\n{done.stderr[-4000:]}"
        return done

    def run(self, words: list[str]) -> str:
        """A ``cogitator-memory`` command: what it printed, checked."""
        done = subprocess.run(
            [str(self.command()), *words[1:]], capture_output=True, text=True, timeout=300, cwd=self.work, env=self.env
        )
        assert done.returncode == 0, f"{shlex.join(words)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        EXPECTED[words[1]](self, words[2:], done.stdout)
        return done.stdout

    def run_python_blocks(self, name: str) -> None:
        """The README's Python blocks, each as a script in a folder of its own."""
        folder = self.folder / f"python-{name}"
        folder.mkdir()
        blocks = BLOCK.findall(README.read_text())
        assert len(blocks) >= 2, "the README shows Python"
        out = ""
        for i, block in enumerate(blocks):
            (folder / f"readme_{i}.py").write_text(block)
            out += self.python([f"readme_{i}.py"], cwd=folder).stdout
        for expected in PYTHON_OUTPUT:
            assert expected in out, f"the README's Python should print {expected!r} on {name}: {out}"


def _demo(newcomer: Newcomer, args: list[str], out: str) -> None:
    assert args == []
    assert f"Wrote a demo conversation to {newcomer.home / 'memory.db'}." in out  # ~/.cogitator/memory.db
    assert "Thread demo-trip · agent travel-agent · 9 entries on 2 branches" in out
    assert "Thread demo-trip-vatican · agent travel-agent · 7 entries on 1 branch" in out


def _threads(newcomer: Newcomer, args: list[str], out: str) -> None:
    assert args == []
    listed = {line.split()[0] for line in out.splitlines()[1:] if line.strip()}
    assert {"demo-trip", "demo-trip-vatican"} <= listed, out


def _search(newcomer: Newcomer, args: list[str], out: str) -> None:
    query = args[0].lower()
    hits = [line.split(None, 3) for line in out.splitlines() if line.strip()]
    assert hits and all(re.fullmatch(r"\d\.\d{3}", hit[0]) for hit in hits), out
    assert any(hit[1:3] == ["entry", "demo-trip"] and query in hit[3].lower() for hit in hits), out


def _remember(newcomer: Newcomer, args: list[str], out: str) -> None:
    assert re.fullmatch(rf"saved node_\w+: {re.escape(args[0])}\n", out), out
    newcomer.remembered.append(args[0])


def _recall(newcomer: Newcomer, args: list[str], out: str) -> None:
    assert newcomer.remembered, "the README recalls before it remembers"
    assert newcomer.remembered[-1] in out.splitlines(), out


EXPECTED = {"demo": _demo, "threads": _threads, "search": _search, "remember": _remember, "recall": _recall}
#: Started by the test as the README says, not run to their end.
SERVERS = {"mcp", "serve"}


def test_the_readme_names_commands_a_newcomer_can_follow() -> None:
    set_up = [kind(words) for words in commands(SET_UP)]
    assert set_up[:3] == ["venv", "install", "demo"], set_up
    assert {"threads", "search", "recall"} <= set(set_up), "the set up shows how to look into the demo"
    agent = commands(AGENT)
    assert [kind(w) for w in agent[:2]] == ["venv", "install"] and agent[-1] == [".venv/bin/cogitator-memory", "mcp"]
    assert install(agent[1]) == (f"{PACKAGE}[server]",), "the agent's memory installs the server extra"
    assert SERVE.search(section(AGENT)), "the README says how to start the inspector"
    assert commands(QUICK_START) == []


def _answer(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    answer: dict[str, Any] = json.loads(result.content[0].text)
    return answer


async def follow_mcp(newcomer: Newcomer, words: list[str]) -> str:
    """``cogitator-memory mcp`` as an MCP client starts it, over stdio: the README's tools, and
    what one saves the others find. The saved thread's id."""
    served = re.search(r"The second serves (.*?) over MCP", section(AGENT), re.S)
    assert served, "the README names the MCP tools"
    named = set(re.findall(r"`(\w+)`", served.group(1)))
    params = StdioServerParameters(command=str(newcomer.command()), args=words[1:], env=newcomer.env, cwd=newcomer.work)
    async with Client(params) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert tools == named, f"the README names {sorted(named)}, the server serves {sorted(tools)}"
        messages = [
            {"role": "user", "content": "My cat Miso only eats salmon from Lisbon."},
            {"role": "assistant", "content": "Noted: salmon for Miso."},
        ]
        saved = _answer(await client.call_tool("save_conversation", {"messages": messages}))
        assert saved["saved"] == 2 and len(saved["entry_ids"]) == 2, saved
        thread = saved["thread_id"]
        found = _answer(await client.call_tool("search_memory", {"query": "what does the cat eat"}))
        hits = [(hit["kind"], hit["thread_id"], hit["text"]) for hit in found["results"]]
        assert ("entry", thread, messages[0]["content"]) in hits, found
        fact = "Miso is a tabby cat"
        _answer(await client.call_tool("remember", {"fact": fact}))
        recalled = _answer(await client.call_tool("recall", {"query": "tabby"}))
        assert [r["fact"] for r in recalled["results"]] == [fact], recalled
        context = _answer(
            await client.call_tool("build_context", {"thread_id": thread, "current_input": "What do I buy for Miso?"})
        )
        assert [m["content"] for m in context["messages"] if m["role"] != "system"][:2] == [
            m["content"] for m in messages
        ], context
        assert context["token_count"] > 0 and context["truncated"] is False, context
    return thread


async def follow_serve(newcomer: Newcomer, args: list[str], mcp_thread: str) -> None:
    """``cogitator-memory serve`` (on a free port rather than 8766, which another run may hold):
    the URL it prints, opened in headless Chromium, shows the demo's thread, Ada's memory and the
    thread the MCP client saved, without a console error."""
    port = free_port()
    process = subprocess.Popen(
        [str(newcomer.command()), *args, "--port", str(port)],
        env=newcomer.env,
        cwd=newcomer.work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        first, second = read_lines(process, 2)
        printed = SERVING.fullmatch(first)
        assert printed and printed.group(2) == str(port), first
        url, token = printed.group(1), printed.group(3)
        assert str(newcomer.home / "run" / f"serve-{port}.token") in second, second
        async with chromium() as browser:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            errors = watch_errors(page)
            await page.goto(url)
            assert token not in page.url  # the page takes the token out of the address bar
            await page.fill("#user", "ada")
            await page.click("#filters button[type=submit]")
            await page.click("[data-thread='demo-trip']")
            await page.wait_for_selector("#entries > li .text >> text=Da Enzo al 29")
            assert await page.locator("#entries > li").count() == 9
            assert "demo-trip-vatican" in (await page.locator("#thread-meta").text_content() or "")
            await shot(page, "newcomer-demo-thread")
            await page.click("#show-user")
            await page.wait_for_selector("#user-title >> text=What memory believes about ada")
            await page.wait_for_selector("#graph-facts >> text=Ada is vegetarian")  # remembered by the CLI
            await page.select_option("#context-thread", "demo-trip")
            await page.fill("#context-q", "Where should we have dinner?")
            await page.click("#context-form button")
            await page.wait_for_selector("#context-messages >> text=Da Enzo al 29 in Trastevere")
            await shot(page, "newcomer-user-view")
            await page.click("[data-view=threads]")
            await page.fill("#user", "")
            await page.click("#filters button[type=submit]")
            await page.wait_for_selector(f"[data-thread='{mcp_thread}']")  # saved by the MCP client
            assert errors == []
    finally:
        process.send_signal(signal.SIGINT)
        try:
            _, stderr = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _, stderr = process.communicate()
    assert process.returncode in (0, 130), stderr.decode()[-3000:]  # 130: stopped by Ctrl-C
    assert b"Traceback" not in stderr


@pytest.fixture(scope="session")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> Venvs:
    return shared_venvs(built_wheel(tmp_path_factory))


async def test_a_newcomer_follows_the_readme(venvs: Venvs, tmp_path: Path) -> None:
    newcomer = Newcomer(venvs, tmp_path)
    # Set up: a venv, the package with no extra, the demo, and a look into what it wrote.
    for words in commands(SET_UP):
        if kind(words) == "install":
            newcomer.install(words)
        elif kind(words) != "venv":
            newcomer.run(words)
    assert (newcomer.home / "memory.db").is_file()
    assert not (newcomer.work / "memory.db").exists()  # in the home folder, wherever it was started
    # The README's Python on exactly that install.
    newcomer.run_python_blocks("set-up install")
    # Give an agent a memory: the server extra, then the MCP server with the SDK's client.
    mcp_thread = ""
    for words in commands(AGENT):
        if kind(words) == "install":
            newcomer.install(words)
        elif kind(words) == "mcp":
            mcp_thread = await follow_mcp(newcomer, words)
        elif kind(words) != "venv":
            newcomer.run(words)
    assert mcp_thread, "the README starts the MCP server"
    # One store: the command line sees what the MCP client saved, and the demo's threads still.
    listed = newcomer.run([".venv/bin/cogitator-memory", "threads"])
    assert mcp_thread in listed
    # The inspector, at the URL serve prints.
    serve = SERVE.search(section(AGENT))
    assert serve
    await follow_serve(newcomer, shlex.split(serve.group(1)), mcp_thread)
    # The README's Python again, on the server install the newcomer now has.
    newcomer.run_python_blocks("server install")
