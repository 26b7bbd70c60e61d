"""The demo's tool calls carry what a real server stores (tui.demo.tools): an edit's diff, a
command's whole output; read as the conversation reads them, on both protocols' faces."""

from __future__ import annotations

from tui.core.client import Client
from tui.core.conversation import CallState, ToolCall, details, entries
from tui.demo.cast import SPEC_BY_ID
from tui.demo.server import DemoServer
from tui.demo.tools import edit_metadata


def calls(messages: list[object]) -> list[ToolCall]:
    return [c for e in entries(messages) for c in e.tools]


def sections(call: ToolCall) -> dict[str, tuple[str, ...]]:
    return {d.section: d.lines for d in details(call, CallState("completed"))}


def test_an_edits_diff_is_the_real_servers_shape() -> None:
    meta = edit_metadata("/p/src/a.ts", "src/a.ts", "const x = 1;", "const x = 2;\nconst y = 3;")
    assert meta["diff"].startswith("Index: /p/src/a.ts\n" + "=" * 67 + "\n--- /p/src/a.ts\n")
    assert "\n-const x = 1;\n+const x = 2;\n+const y = 3;\n" in meta["diff"]
    assert meta["filediff"]["additions"] == 2 and meta["filediff"]["deletions"] == 1


async def read_calls(protocol: str, session: str) -> list[ToolCall]:
    server = DemoServer(speed=400, heartbeat=0.05, protocol=protocol)
    server.freeze()
    async with server, Client(server.url) as client:
        client.protocol = protocol
        directory = SPEC_BY_ID[session].directory
        return calls(await client.conversation(session, None, directory))


async def test_a_completed_session_shows_its_edits_diff_and_a_commands_whole_output() -> None:
    for protocol in ("v1", "v2"):
        done = await read_calls(protocol, "ses_demo_cart")
        edit = next(c for c in done if c.tool == "edit")
        diff = sections(edit)["diff"]
        # (the cart's refactor edits its own reducer: issue 41 item 10, each task its own work)
        assert any(
            line.startswith("-") and "[...state.items, action.item]" in line for line in diff
        )
        assert any(line.startswith("+") and "mergeLine(state.items" in line for line in diff), diff
        stale = await read_calls(protocol, "ses_demo_k8s")
        bash = next(c for c in stale if c.tool in ("bash", "shell"))
        assert len(sections(bash)["output"]) > 3, (protocol, bash.output)
