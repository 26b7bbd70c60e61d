"""The demo's cast: two project folders, their sessions, and what the scripted agents say and do.

Each session has an `initial` state (what the deterministic initial world shows) and a `cycle`
of run kinds it goes through afterwards, so every session visits many states over time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WEBSHOP = "/home/demo/projects/webshop"
INFRA = "/home/demo/projects/infra"

MARKUP_TITLE = "[bold red]not bold[/] \x1b[31mred?\x1b[0m"

TOP_CYCLE = (
    "complete",
    "long",
    "retry",
    "permission",
    "complete",
    "question",
    "error",
    "abort",
    "complete",
    "stale",
)


@dataclass(frozen=True, slots=True)
class Spec:
    """One scripted session."""

    sid: str
    directory: str
    title: str
    slug: str
    initial: str  # busy|retry|permission|question|completed|aborted|error|interrupted|stale|
    # subagent (parent with a running task) — children take busy|permission
    prompts: tuple[str, ...]
    replies: tuple[str, ...]  # what the agent ends a run with, one per prompt (its answer)
    parent: str | None = None
    child: str | None = None
    cycle: tuple[str, ...] = TOP_CYCLE
    offset: int = 0  # where in `cycle` this session starts

    @property
    def work(self) -> Work:
        """What this session's agent reads, runs, asks and answers: its own task's (a session
        made from the dashboard, which has none, takes its folder's)."""
        return WORKS.get(self.sid) or FOLDERS[self.directory]


@dataclass(frozen=True, slots=True)
class Work:
    """What an agent reads, runs, asks and answers: one session's task, or (for a session
    made from the dashboard) its project folder's."""

    files: tuple[str, ...]
    commands: tuple[tuple[str, str, str], ...]  # (command, description, output)
    asks: tuple[tuple[str, str, str], ...]  # (command, always-pattern, description)
    questions: tuple[dict[str, Any], ...]


def _q(
    header: str, question: str, *options: tuple[str, str], multiple: bool = False
) -> dict[str, Any]:
    return {
        "question": question,
        "header": header,
        "multiple": multiple,
        "options": [{"label": label, "description": desc} for label, desc in options],
    }


FOLDERS: dict[str, Work] = {
    WEBSHOP: Work(
        files=(
            "src/checkout/session.ts",
            "src/cart/reducer.ts",
            "src/search/index.ts",
            "src/auth/middleware.ts",
            "src/pages/product/[slug].tsx",
        ),
        commands=(
            ("npm test -- --runInBand", "Run the test suite", "Tests: 214 passed, 214 total"),
            ("npm run lint", "Lint the project", "✔ No problems found"),
            ("npx playwright test checkout", "Run checkout e2e tests", "12 passed (41.3s)"),
        ),
        asks=(
            ("git push origin main", "git push *", "Push the release commit"),
            ("npm publish --dry-run", "npm publish *", "Check the package contents"),
            ("rm -rf .next/cache", "rm *", "Clear the build cache"),
        ),
        questions=(
            _q(
                "Locale",
                "Which German variant should the product pages use?",
                ("de-DE", "Germany"),
                ("de-AT", "Austria"),
                ("de-CH", "Switzerland"),
            ),
            _q(
                "Payment",
                "Which payment methods should checkout offer first?",
                ("Card", "Visa, Mastercard, Amex"),
                ("PayPal", "Redirect flow"),
                ("SEPA", "Direct debit"),
                multiple=True,
            ),
        ),
    ),
    INFRA: Work(
        files=(
            "modules/dns/main.tf",
            "alerts/rules.yml",
            "scripts/backup.sh",
            "charts/ingress/values.yaml",
            "zones/shop.example.com.tf",
        ),
        commands=(
            (
                "terraform plan -out=tfplan",
                "Plan infrastructure changes",
                "Plan: 3 to add, 1 to change, 0 to destroy.",
            ),
            ("helm template charts/ingress", "Render the ingress chart", "---\n# Source: ingress"),
            (
                "promtool check rules alerts/rules.yml",
                "Validate alert rules",
                "SUCCESS: 27 rules found",
            ),
        ),
        asks=(
            ("terraform apply tfplan", "terraform apply *", "Apply the saved plan"),
            (
                "kubectl rollout restart deploy/ingress-nginx",
                "kubectl rollout *",
                "Restart the ingress controller",
            ),
            ("git push origin main", "git push *", "Push the change"),
        ),
        questions=(
            _q(
                "Region",
                "Which AWS region should host the new zone records?",
                ("eu-central-1", "Frankfurt"),
                ("us-east-1", "N. Virginia"),
            ),
            _q(
                "Severity",
                "Should disk-pressure alerts page on-call or only open a ticket?",
                ("Page", "Wake someone up"),
                ("Ticket", "Next business day"),
            ),
        ),
    ),
}

# Each session's own work, so that what it reads, runs, asks leave for and asks about belongs to
# its task ("Move DNS zones" asks about a zone's region, never edits the backup script). The
# first command, request and question of a session are the ones its initial state shows.
WORKS: dict[str, Work] = {
    "ses_demo_checkout": Work(
        files=("src/checkout/session.ts", "src/checkout/stripe.ts", "src/pages/cart.tsx"),
        commands=(
            ("npm test -- --runInBand", "Run the test suite", "Tests: 214 passed, 214 total"),
            ("npx playwright test checkout", "Run checkout e2e tests", "12 passed (41.3s)"),
        ),
        asks=(
            ("npm install stripe", "npm install *", "Add the Stripe SDK"),
            (
                "stripe listen --forward-to localhost:3000/api/stripe/webhook",
                "stripe listen *",
                "Forward Stripe's test webhooks",
            ),
        ),
        questions=(
            _q(
                "Payment",
                "Which payment methods should checkout offer first?",
                ("Card", "Visa, Mastercard, Amex"),
                ("PayPal", "Redirect flow"),
                ("SEPA", "Direct debit"),
                multiple=True,
            ),
            _q(
                "Checkout page",
                "Should Pay open Stripe's hosted checkout page or an embedded form?",
                ("Hosted", "Stripe's page, least code"),
                ("Embedded", "Stays on the shop's page"),
            ),
        ),
    ),
    "ses_demo_search": Work(
        files=("src/search/index.ts", "src/search/index.test.ts", "test/fixtures/search.ts"),
        commands=(
            (
                "npm test -- src/search --runInBand",
                "Run the search tests",
                "Tests: 18 passed, 18 total",
            ),
            (
                "for i in $(seq 20); do npx jest src/search || break; done",
                "Run the search tests 20 times",
                "Tests: 18 passed, 18 total",
            ),
        ),
        asks=(
            ("rm -rf .cache/search-index", "rm *", "Delete the index the tests share"),
            ("git push origin fix/flaky-search", "git push *", "Push the fix branch"),
        ),
        questions=(
            _q(
                "Fixture",
                "Should each search test build its own index, or share one reset between tests?",
                ("Own index", "Isolated, a little slower"),
                ("Shared, reset", "Faster, one reset per test"),
            ),
        ),
    ),
    "ses_demo_deploy": Work(
        files=("src/version.ts", "CHANGELOG.md"),
        commands=(
            ("npm run build", "Build the release", "Compiled successfully"),
            ("git log --oneline v2.3.0..HEAD", "List the changes since 2.3", "41 commits"),
        ),
        asks=(
            ("git push origin main", "git push *", "Push the release commit"),
            ("git push origin v2.4.0", "git push *", "Push the release tag"),
            ("npm publish --dry-run", "npm publish *", "Check the package contents"),
        ),
        questions=(
            _q(
                "Release",
                "Deploy 2.4 to production now, or in Monday's release window?",
                ("Now", "Deploy at once"),
                ("Monday", "The usual window"),
            ),
        ),
    ),
    "ses_demo_i18n": Work(
        files=("src/pages/product/[slug].tsx", "locales/de/product.ts", "src/i18n/config.ts"),
        commands=(
            ("npm run i18n:check", "Look for missing translations", "✔ 0 keys missing in de"),
            ("npm run lint", "Lint the project", "✔ No problems found"),
        ),
        asks=(
            ("npm install i18next-icu", "npm install *", "Add ICU message formatting"),
            ("rm -rf .next/cache", "rm *", "Clear the build cache so the new locale loads"),
        ),
        questions=(
            _q(
                "Locale",
                "Which German variant should the product pages use?",
                ("de-DE", "Germany"),
                ("de-AT", "Austria"),
                ("de-CH", "Switzerland"),
            ),
            _q(
                "Formality",
                "Should the German pages address customers as Sie or as du?",
                ("Sie", "Formal"),
                ("du", "Informal"),
            ),
        ),
    ),
    "ses_demo_cart": Work(
        files=("src/cart/reducer.ts", "src/cart/context.tsx", "src/cart/reducer.test.ts"),
        commands=(
            ("npm test -- src/cart --runInBand", "Run the cart tests", "Tests: 9 passed, 9 total"),
            ("npm run lint", "Lint the project", "✔ No problems found"),
        ),
        asks=(
            (
                "npx jscodeshift -t codemods/use-cart.js src",
                "npx jscodeshift *",
                "Rewrite the callers of the old cart context",
            ),
            ("git push origin refactor/cart-reducer", "git push *", "Push the refactor"),
        ),
        questions=(
            _q(
                "Persistence",
                "Should the cart reducer keep saving the cart to localStorage?",
                ("Yes", "The cart survives a reload"),
                ("No", "Server-side carts only"),
            ),
        ),
    ),
    "ses_demo_auth": Work(
        files=("src/auth/middleware.ts", "src/auth/oauth.ts", "src/pages/login.tsx"),
        commands=(
            (
                "npm test -- src/auth --runInBand",
                "Run the auth tests",
                "Tests: 23 passed, 23 total",
            ),
        ),
        asks=(("npm install oauth4webapi", "npm install *", "Add the OAuth 2.1 client library"),),
        questions=(
            _q(
                "Identity provider",
                "Which identity provider should the OAuth login use?",
                ("Auth0", "Hosted"),
                ("Keycloak", "Self-hosted"),
            ),
        ),
    ),
    "ses_demo_auth_explore": Work(
        files=("src/auth/middleware.ts", "src/checkout/session.ts", "src/pages/product/[slug].tsx"),
        commands=(("grep -rn req.session src", "Find the session cookie's readers", "3 matches"),),
        asks=(("grep -rn req.session node_modules", "grep *", "Search the dependencies too"),),
        questions=(
            _q(
                "Scope",
                "Should the search for session cookie readers include the tests?",
                ("Yes", "src and test"),
                ("No", "src only"),
            ),
        ),
    ),
    "ses_demo_markup": Work(
        files=("docs/titles.md",),
        commands=(("cat -v docs/titles.md", "Show the title's bytes", "^[[31mred?^[[0m"),),
        asks=(("printf '[bold]not bold[/]\\n'", "printf *", "Print a title with markup"),),
        questions=(
            _q(
                "Titles",
                "Should a title's [bold]markup[/] be shown as typed?",
                ("As typed", "Literally"),
                ("Obeyed", "Rendered"),
            ),
        ),
    ),
    "ses_demo_terraform": Work(
        files=("versions.tf", "providers.tf", ".terraform.lock.hcl"),
        commands=(
            (
                "terraform plan -out=tfplan",
                "Plan infrastructure changes",
                "Plan: 3 to add, 1 to change, 0 to destroy.",
            ),
            (
                "terraform init -upgrade",
                "Upgrade the providers",
                "- Installed hashicorp/aws v6.0.0",
            ),
            (
                "terraform validate",
                "Validate the configuration",
                "Success! The configuration is valid.",
            ),
        ),
        asks=(
            ("terraform apply tfplan", "terraform apply *", "Apply the saved plan"),
            (
                "terraform state replace-provider hashicorp/aws hashicorp/aws",
                "terraform state *",
                "Point the state at the new provider",
            ),
        ),
        questions=(
            _q(
                "Version",
                "Pin the AWS provider to exactly 6.0.0 or to ~> 6.0?",
                ("~> 6.0", "Minor updates allowed"),
                ("6.0.0", "Exactly this one"),
            ),
        ),
    ),
    "ses_demo_alerts": Work(
        files=("alerts/rules.yml", "alerts/tests.yml"),
        commands=(
            (
                "promtool check rules alerts/rules.yml",
                "Validate alert rules",
                "SUCCESS: 27 rules found",
            ),
            ("promtool test rules alerts/tests.yml", "Unit-test the alert rules", "SUCCESS"),
        ),
        asks=(
            (
                "curl -X POST http://prometheus:9090/-/reload",
                "curl *",
                "Reload Prometheus's rules",
            ),
            ("git push origin main", "git push *", "Push the tuned rules"),
        ),
        questions=(
            _q(
                "Severity",
                "Should disk-pressure alerts page on-call or only open a ticket?",
                ("Page", "Wake someone up"),
                ("Ticket", "Next business day"),
            ),
        ),
    ),
    "ses_demo_backup": Work(
        files=("scripts/backup.sh", "scripts/restore.sh", "systemd/backup.timer"),
        commands=(
            ("shellcheck scripts/backup.sh", "Lint the backup script", "(no issues)"),
            ("restic backup --dry-run /srv/data", "Dry-run the backup", "would add 1204 files"),
        ),
        asks=(
            (
                "restic restore latest --target /tmp/restore-test",
                "restic restore *",
                "Restore last night's snapshot into a scratch folder",
            ),
            ("aws s3 mb s3://backup-restore-scratch", "aws s3 *", "Make a scratch bucket"),
        ),
        questions=(
            _q(
                "Retention",
                "How many nightly backup snapshots should be kept?",
                ("7", "One week"),
                ("30", "One month"),
            ),
        ),
    ),
    "ses_demo_k8s": Work(
        files=("charts/ingress/Chart.yaml", "charts/ingress/values.yaml"),
        commands=(
            ("helm dependency update charts/ingress", "Fetch the new chart", "Saving 1 charts"),
            ("helm template charts/ingress", "Render the ingress chart", "---\n# Source: ingress"),
        ),
        asks=(
            (
                "kubectl rollout restart deploy/ingress-nginx",
                "kubectl rollout *",
                "Restart the ingress controller",
            ),
            (
                "helm upgrade ingress charts/ingress --kube-context staging",
                "helm upgrade *",
                "Roll the chart out to staging",
            ),
        ),
        questions=(
            _q(
                "Rollout",
                "Roll 4.12 out to staging only, or to production too after the smoke test?",
                ("Staging", "Production later"),
                ("Both", "After the smoke test"),
            ),
        ),
    ),
    "ses_demo_dns": Work(
        files=("zones/shop.example.com.tf", "modules/dns/main.tf"),
        commands=(
            (
                "dig +short NS shop.example.com",
                "Look up the zone's name servers",
                "ns1.oldhost.net.",
            ),
            (
                "terraform plan -target=module.dns -out=tfplan",
                "Plan the zone's move",
                "Plan: 12 to add, 0 to change, 0 to destroy.",
            ),
        ),
        asks=(
            ("terraform apply tfplan", "terraform apply *", "Create the zone in Route 53"),
            (
                "aws route53 list-resource-record-sets --hosted-zone-id Z0123456789ABC",
                "aws route53 *",
                "Compare the zone's records",
            ),
        ),
        questions=(
            _q(
                "Region",
                "Which AWS region should host the new zone records?",
                ("eu-central-1", "Frankfurt"),
                ("us-east-1", "N. Virginia"),
            ),
        ),
    ),
    "ses_demo_dns_apply": Work(
        files=("zones/shop.example.com.tf",),
        commands=(("terraform fmt zones", "Format the zone files", "zones/shop.example.com.tf"),),
        asks=(("terraform fmt -write=true zones", "terraform fmt *", "Rewrite the zone files"),),
        questions=(
            _q(
                "TTL",
                "Lower the zone's TTL to 300 s or to 60 s before the switch?",
                ("300 s", "Five minutes"),
                ("60 s", "One minute"),
            ),
        ),
    ),
}

SPECS: tuple[Spec, ...] = (
    Spec(
        "ses_demo_checkout",
        WEBSHOP,
        "Add Stripe checkout flow",
        "brave-otter",
        "busy",
        (
            "Add a Stripe checkout session endpoint and wire it into the cart page.",
            "Handle declined cards with a friendly message.",
        ),
        (
            "POST /api/checkout/session now creates the Stripe Checkout session, and the cart "
            "page's Pay button redirects to it. Tests pass.",
            "A declined card now says 'Your card was declined: try another card' on the "
            "payment step instead of an error page; a test covers each decline code.",
        ),
    ),
    Spec(
        "ses_demo_search",
        WEBSHOP,
        "Fix flaky search tests",
        "quiet-falcon",
        "retry",
        (
            "The search tests fail randomly on CI, find out why.",
            "Make the index fixture deterministic.",
        ),
        (
            "Found it: the tests share one search index and run in parallel, so one test's "
            "documents show up in another's results (src/search/index.ts).",
            "The index fixture now builds a fresh index per test with fixed ids and a fixed "
            "clock; 50 runs in a row pass.",
        ),
        offset=2,
    ),
    Spec(
        "ses_demo_deploy",
        WEBSHOP,
        "Release v2.4 to production",
        "swift-heron",
        "permission",
        ("Bump the version to 2.4.0, tag it and push the release.", "Write the changelog for 2.4."),
        (
            "Version 2.4.0 is committed, tagged v2.4.0 and pushed.",
            "CHANGELOG.md has a 2.4.0 section now: Stripe checkout, German product pages and "
            "the cart reducer.",
        ),
        offset=4,
    ),
    Spec(
        "ses_demo_i18n",
        WEBSHOP,
        "Translate product pages to German",
        "calm-lynx",
        "question",
        ("Add German translations for the product pages.", "Translate the checkout emails too."),
        (
            "The product pages have German translations now (titles, descriptions, size "
            "charts), and the language switcher offers Deutsch.",
            "The order confirmation and shipping emails are in German too, worded like the "
            "product pages.",
        ),
        offset=6,
    ),
    Spec(
        "ses_demo_cart",
        WEBSHOP,
        "Refactor cart state into reducers",
        "bold-badger",
        "completed",
        ("Move the cart state from context into a reducer.", "Add tests for the cart reducer."),
        (
            "The cart state lives in cartReducer (src/cart/reducer.ts) now; the context only "
            "passes the state and dispatch down.",
            "Added 9 tests for the cart reducer, the empty-cart case among them; all pass.",
        ),
        offset=8,
    ),
    Spec(
        "ses_demo_auth",
        WEBSHOP,
        "Migrate login to OAuth 2.1",
        "keen-walrus",
        "subagent",
        (
            "Migrate the login flow from sessions to OAuth 2.1 with PKCE.",
            "Remove the legacy session cookie code.",
        ),
        (
            "Login uses OAuth 2.1 with PKCE now: the authorize redirect, the code exchange "
            "and the token refresh are in src/auth/middleware.ts.",
            "The legacy session cookie code is gone; nothing reads req.session any more.",
        ),
        child="ses_demo_auth_explore",
        cycle=("subagent", "complete", "subagent", "error"),
    ),
    Spec(
        "ses_demo_auth_explore",
        WEBSHOP,
        "Explore session middleware (@general subagent)",
        "tidy-finch",
        "busy",
        ("Find every place that reads the session cookie and report file:line.",),
        (
            "The session cookie is read in 3 places: src/auth/middleware.ts:42, "
            "src/checkout/session.ts:17 and src/pages/product/[slug].tsx:88.",
        ),
        parent="ses_demo_auth",
        cycle=(),
    ),
    Spec(
        "ses_demo_markup",
        INFRA,
        MARKUP_TITLE,
        "odd-newt",
        "completed",
        ("Check that titles are shown literally.",),
        ("Checked: this session's title is shown as typed, its markup and escapes not obeyed.",),
        offset=1,
    ),
    Spec(
        "ses_demo_terraform",
        INFRA,
        "Upgrade Terraform AWS provider to v6",
        "stoic-ibex",
        "aborted",
        ("Upgrade the AWS provider to v6 and fix the deprecations.", "Run a plan against staging."),
        (
            "The AWS provider is pinned to ~> 6.0 and the deprecated arguments are replaced; "
            "terraform validate passes.",
            "The staging plan is clean: 3 to add, 1 to change, 0 to destroy, all from the "
            "provider upgrade.",
        ),
        offset=3,
    ),
    Spec(
        "ses_demo_alerts",
        INFRA,
        "Tune Prometheus alert rules",
        "merry-crane",
        "error",
        (
            "Reduce alert noise: the disk alerts flap every night.",
            "Add an alert for certificate expiry.",
        ),
        (
            "The disk alerts now wait 15 minutes above the threshold before they fire, so the "
            "nightly backup's spike no longer pages anyone; the rules validate.",
            "Added CertificateExpiresSoon: a ticket 21 days before a certificate expires, a "
            "page at 7 days.",
        ),
        offset=5,
    ),
    Spec(
        "ses_demo_backup",
        INFRA,
        "Review nightly backup script",
        "lucky-moose",
        "interrupted",
        (
            "Review scripts/backup.sh and make it resumable.",
            "Test a restore into a scratch bucket.",
        ),
        (
            "scripts/backup.sh records the last volume it finished and resumes from there: a "
            "failed night no longer starts over.",
            "Restored last night's snapshot into a scratch bucket: all 1,204 files match "
            "their checksums.",
        ),
        cycle=("complete", "long", "restart", "complete", "error", "question"),
    ),
    Spec(
        "ses_demo_k8s",
        INFRA,
        "Bump ingress-nginx chart to 4.12",
        "gentle-yak",
        "stale",
        ("Bump the ingress-nginx chart and check the values diff.", "Roll it out to staging."),
        (
            "The chart is at 4.12; the values diff is small: the controller's image tag and "
            "one renamed key.",
            "ingress-nginx 4.12 is rolled out to staging: every pod is ready and the smoke "
            "test passes.",
        ),
        offset=7,
    ),
    Spec(
        "ses_demo_dns",
        INFRA,
        "Move DNS zones to Route 53",
        "sunny-koala",
        "subagent",
        (
            "Move the shop.example.com zone from the old provider to Route 53.",
            "Lower the TTLs before the switch.",
        ),
        (
            "The shop.example.com zone is in Route 53 with the old provider's records; point "
            "the registrar at its name servers when you are ready.",
            "Every record's TTL is down to 300 s, so the switch takes effect within minutes.",
        ),
        child="ses_demo_dns_apply",
        cycle=("subagent", "complete", "subagent", "retry"),
    ),
    Spec(
        "ses_demo_dns_apply",
        INFRA,
        "Rewrite zone files (@general subagent)",
        "shy-gecko",
        "permission",
        ("Rewrite zones/shop.example.com.tf for Route 53 and show the diff.",),
        (
            "zones/shop.example.com.tf is rewritten for Route 53; the diff only lowers the "
            "TTL from 3600 to 300.",
        ),
        parent="ses_demo_dns",
        cycle=(),
    ),
)

SPEC_BY_ID: dict[str, Spec] = {spec.sid: spec for spec in SPECS}

SCRIPTED_REPLY = (
    "Done. (A scripted reply: the demo's agents do not read prompts, they play their script.)"
)
"""The reply to a prompt not in a session's script (one sent from the dashboard)."""


def reply_to(spec: Spec, prompt: str) -> str:
    """What the agent of `spec` ends a run of `prompt` with: the reply its script has for it."""
    for asked, reply in zip(spec.prompts, spec.replies, strict=True):
        if asked == prompt:
            return reply
    return SCRIPTED_REPLY


REFUSED_REPLY = "Understood: I left that command alone, as you asked."
"""A run's end after a permission refused with a message for the agent."""
SCRIPTED_RESTART = (
    "A scripted restart (demo): the simulated server restarts during this command, as a real "
    "one may; the run is cut off and reads as interrupted. Nothing is broken."
)
"""Said in the run a scripted restart cuts off, so that no one takes it for a fault."""

ERRORS: tuple[dict[str, Any], ...] = (
    {
        "name": "APIError",
        "data": {
            "message": "Bad Request: tools.3.input_schema is invalid",
            "statusCode": 400,
            "isRetryable": False,
        },
    },
    {
        "name": "ProviderAuthError",
        "data": {"providerID": "anthropic", "message": "Invalid API key"},
    },
    {"name": "UnknownError", "data": {"message": "fetch failed: socket hang up"}},
)
RETRY_MESSAGE = "Overloaded: the provider is temporarily unavailable (503)"
RETRY_FAILED: dict[str, Any] = {
    "name": "APIError",
    "data": {"message": "Service Unavailable", "statusCode": 503, "isRetryable": True},
}
PERMISSION_REJECTED = "The user rejected permission to use this specific tool call."
PERMISSION_FEEDBACK = (
    "The user rejected permission to use this specific tool call with the following feedback: "
)
QUESTION_REJECTED = "The user dismissed this question"
