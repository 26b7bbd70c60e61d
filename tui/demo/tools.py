"""What the demo's tool calls did, as a real 1.18.33 server stores it: an edit's change and its
unified diff (`metadata.diff`, `metadata.filediff`), a command's output of several lines. The
conversation view expands a call to these (tests/fixtures/tool_calls_v1_1.18.33.json holds the
real server's shapes)."""

from __future__ import annotations

import difflib

from .world import Json

#: file (relative to its project folder) -> (the text an edit replaced, what it wrote)
EDITS: dict[str, tuple[str, str]] = {
    "src/checkout/session.ts": (
        "  const timeout = 5_000;",
        "  // the payment provider answers slowly at peak times\n  const timeout = 15_000;",
    ),
    "src/cart/reducer.ts": (
        "      return { ...state, items: [...state.items, action.item] };",
        "      const items = mergeLine(state.items, action.item);\n"
        "      return { ...state, items };",
    ),
    "src/search/index.ts": ("const PAGE_SIZE = 50;", "const PAGE_SIZE = 24;"),
    "src/auth/middleware.ts": (
        '  if (!session) return redirect("/login");',
        "  if (!session || session.expiresAt < Date.now()) {\n"
        "    return redirect(`/login?next=${encodeURIComponent(req.url)}`);\n"
        "  }",
    ),
    "src/pages/product/[slug].tsx": (
        "      <Price value={product.price} />",
        "      <Price value={product.price} currency={locale.currency} />",
    ),
    "modules/dns/main.tf": ("  ttl     = 3600", "  ttl     = 300"),
    "alerts/rules.yml": (
        "    for: 5m",
        "    for: 15m\n    labels:\n      severity: page",
    ),
    "scripts/backup.sh": (
        "restic backup /srv/data",
        'restic backup --exclude-caches /srv/data \\\n  || { echo "backup failed" >&2; exit 1; }',
    ),
    "charts/ingress/values.yaml": ('    tag: "1.11.2"', '    tag: "1.12.1"'),
    "zones/shop.example.com.tf": ("  ttl = 3600", "  ttl = 300"),
    "src/checkout/stripe.ts": (
        "export const stripe = null;",
        "export const stripe = new Stripe(env.STRIPE_SECRET_KEY, {\n"
        '  apiVersion: "2025-01-27.acacia",\n'
        "});",
    ),
    "src/pages/cart.tsx": (
        "      <Button disabled>Pay</Button>",
        '      <Button onClick={() => redirectTo("/api/checkout/session")}>Pay</Button>',
    ),
    "src/search/index.test.ts": (
        "const index = sharedIndex;",
        "let index: SearchIndex;\nbeforeEach(() => {\n  index = freshIndex();\n});",
    ),
    "test/fixtures/search.ts": (
        "  id: randomUUID(),",
        "  id: `doc-${n}`,\n  createdAt: FIXED_CLOCK,",
    ),
    "src/version.ts": ('export const VERSION = "2.3.1";', 'export const VERSION = "2.4.0";'),
    "CHANGELOG.md": (
        "## Unreleased",
        "## 2.4.0\n\n- Stripe checkout\n- German product pages\n- Cart state in a reducer",
    ),
    "locales/de/product.ts": (
        "export default {};",
        'export default {\n  addToCart: "In den Warenkorb",\n  sizeChart: "Größentabelle",\n};',
    ),
    "src/i18n/config.ts": ('  locales: ["en"],', '  locales: ["en", "de"],'),
    "src/cart/context.tsx": (
        "  const [items, setItems] = useState<Item[]>([]);",
        "  const [state, dispatch] = useReducer(cartReducer, EMPTY_CART);",
    ),
    "src/cart/reducer.test.ts": (
        'describe("cartReducer", () => {});',
        'describe("cartReducer", () => {\n'
        '  it("keeps an empty cart empty", () => {\n'
        '    expect(cartReducer(EMPTY_CART, { type: "clear" })).toEqual(EMPTY_CART);\n'
        "  });\n"
        "});",
    ),
    "src/auth/oauth.ts": (
        'export const flow = "session";',
        'export const flow = "authorization_code";\nexport const pkce = "S256";',
    ),
    "src/pages/login.tsx": (
        '      <form method="post" action="/login">',
        '      <a href="/oauth/authorize">Sign in</a>',
    ),
    "docs/titles.md": ("Titles are rendered.", "Titles are shown as typed: markup is not obeyed."),
    "versions.tf": ('      version = "~> 5.80"', '      version = "~> 6.0"'),
    "providers.tf": ("  s3_use_path_style = true", "  s3_use_path_style = true # (v6: unchanged)"),
    ".terraform.lock.hcl": ('  version     = "5.80.0"', '  version     = "6.0.0"'),
    "alerts/tests.yml": (
        "    alert_rule_test: []",
        "    alert_rule_test:\n      - eval_time: 20m\n        alertname: DiskPressure",
    ),
    "scripts/restore.sh": (
        "restic restore latest --target /srv/data",
        'restic restore latest --target "${TARGET:-/srv/data}"',
    ),
    "systemd/backup.timer": ("OnCalendar=daily", "OnCalendar=*-*-* 02:30:00\nPersistent=true"),
    "charts/ingress/Chart.yaml": ("    version: 4.11.3", "    version: 4.12.0"),
}

#: command -> its whole output (the cast's one line is its last)
OUTPUTS: dict[str, str] = {
    "npm test -- --runInBand": (
        "> shop@2.4.0 test\n"
        "> jest --runInBand\n"
        "\n"
        "PASS src/cart/reducer.test.ts\n"
        "PASS src/checkout/session.test.ts\n"
        "PASS src/auth/middleware.test.ts\n"
        "PASS src/search/index.test.ts\n"
        "\n"
        "Test Suites: 31 passed, 31 total\n"
        "Tests: 214 passed, 214 total\n"
    ),
    "terraform plan -out=tfplan": (
        "aws_route53_zone.shop: Refreshing state... [id=Z0123456789ABC]\n"
        "\n"
        "Terraform will perform the following actions:\n"
        "\n"
        "  # aws_route53_record.www will be created\n"
        '  + resource "aws_route53_record" "www" {\n'
        '      + name    = "www.shop.example.com"\n'
        "      + ttl     = 300\n"
        '      + type    = "CNAME"\n'
        "    }\n"
        "\n"
        "Plan: 3 to add, 1 to change, 0 to destroy.\n"
    ),
    "npm run lint": ("> shop@2.4.0 lint\n> eslint . --max-warnings 0\n\n✔ No problems found\n"),
    "helm template charts/ingress": (
        "---\n"
        "# Source: ingress/templates/controller-deployment.yaml\n"
        "apiVersion: apps/v1\n"
        "kind: Deployment\n"
        "metadata:\n"
        "  name: ingress-nginx-controller\n"
        "spec:\n"
        "  replicas: 2\n"
    ),
    "npx playwright test checkout": (
        "Running 12 tests using 4 workers\n"
        "\n"
        "  ✓  1 checkout › pays by card (3.1s)\n"
        "  ✓  2 checkout › pays with PayPal (4.8s)\n"
        "  ✓  3 checkout › keeps the cart after a failed payment (2.2s)\n"
        "  …\n"
        "\n"
        "  12 passed (41.3s)\n"
    ),
}


def edit_of(rel: str) -> tuple[str, str]:
    """What an edit of file `rel` replaces, and with what."""
    return EDITS.get(rel, ("// TODO: handle the empty case", "if (!items.length) return [];"))


def output_of(command: str, short: str) -> str:
    """A command's whole output (`short`, the cast's one line, when it has no longer one)."""
    return OUTPUTS.get(command, short)


def _comment(rel: str) -> str:
    if rel.endswith((".ts", ".tsx")):
        return f"// {rel}"
    return f"<!-- {rel} -->" if rel.endswith(".md") else f"# {rel}"


def edit_metadata(path: str, rel: str, old: str, new: str) -> Json:
    """An edit's metadata as 1.18.33 stores it: the unified diff of the file (`diff`, with its
    `Index:` line) and its `filediff` (patch, additions, deletions)."""
    head = [_comment(rel), ""]
    before = [*head, *old.splitlines(), ""]
    after = [*head, *new.splitlines(), ""]
    body = list(difflib.unified_diff(before, after, path, path, lineterm=""))
    diff = f"Index: {path}\n{'=' * 67}\n" + "\n".join(body) + "\n"
    adds = sum(1 for line in body if line.startswith("+") and not line.startswith("+++"))
    dels = sum(1 for line in body if line.startswith("-") and not line.startswith("---"))
    return {
        "diagnostics": {},
        "diff": diff,
        "filediff": {"file": path, "patch": diff, "additions": adds, "deletions": dels},
        "truncated": False,
    }
