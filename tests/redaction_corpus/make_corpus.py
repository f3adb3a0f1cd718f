"""Write the seeded redaction corpus: realistic tickets, commit messages and log lines.

Each record is ``{"source", "text", "planted": [[start, end, kind]], "negatives":
[[start, end, label]]}``: `planted` are the exact spans that must be redacted, `negatives`
hard negatives that must survive (version numbers, git shas, UUIDs, timestamps, paths,
order numbers, HDFS block ids...). Same seed, same bytes:

    python tests/redaction_corpus/make_corpus.py            # rewrites corpus.jsonl
"""

from __future__ import annotations

import base64
import json
import random
import string
import sys
from pathlib import Path

HERE = Path(__file__).parent
SEED = 20240607
N_RECORDS = 1500

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
FIRST = ["jane", "john", "maria", "li", "ahmed", "olga", "pierre", "sofia", "kenji", "amara",
         "lucas", "emma", "noah", "chloe", "ivan", "fatima", "tom", "zoe", "raj", "nina"]
LAST = ["doe", "smith", "garcia", "wang", "khan", "petrova", "martin", "rossi", "tanaka",
        "okafor", "silva", "brown", "muller", "dubois", "novak", "haddad", "lee", "young"]
DOMAINS = ["example.com", "mail.example.org", "acme-corp.io", "tallybird.co.uk", "gmail.com",
           "outlook.fr", "web.de", "company.example", "uni-heidelberg.de", "proton.me"]


class Doc:
    """Builds one text while recording where planted values and negatives sit."""

    def __init__(self, source: str):
        self.source, self.parts, self.planted, self.negatives, self.n = source, [], [], [], 0

    def add(self, text: str) -> "Doc":
        self.parts.append(text)
        self.n += len(text)
        return self

    def pii(self, kind: str, value: str) -> "Doc":
        self.planted.append([self.n, self.n + len(value), kind])
        return self.add(value)

    def neg(self, label: str, value: str) -> "Doc":
        self.negatives.append([self.n, self.n + len(value), label])
        return self.add(value)

    def maybe_negative(self, g: "Gen", before: str, after: str) -> "Doc":
        """Half of the texts end with one more hard negative."""
        if g.r.random() < 0.5:
            label, value = g.negative()
            self.add(before).neg(label, value).add(after)
        return self

    def record(self) -> dict:
        return {"source": self.source, "text": "".join(self.parts), "planted": self.planted,
                "negatives": self.negatives}


class Gen:
    """Value makers, all drawn from one seeded `random.Random`."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def s(self, alphabet: str, n: int) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def name(self) -> str:
        return f"{self.r.choice(FIRST).title()} {self.r.choice(LAST).title()}"

    def email(self) -> str:
        first, last = self.r.choice(FIRST), self.r.choice(LAST)
        local = self.r.choice([f"{first}.{last}", f"{first}{self.r.randint(1, 99)}",
                               f"{first[0]}{last}", f"{first}.{last}+support", f"{first}_{last}"])
        out = f"{local}@{self.r.choice(DOMAINS)}"
        return out.title() if self.r.random() < 0.1 else out

    def phone(self) -> str:
        a, b, c = self.r.randint(201, 989), self.r.randint(200, 999), self.r.randint(0, 9999)
        return self.r.choice([
            f"+1 ({a}) {b}-{c:04d}", f"({a}) {b}-{c:04d}", f"{a}-{b}-{c:04d}", f"{a}.{b}.{c:04d}",
            f"+1-{a}-{b}-{c:04d}", f"+1{a}{b}{c:04d}",
            f"+44 20 {self.r.randint(7000, 8999)} {self.r.randint(1000, 9999)}",
            f"+49 30 {self.r.randint(100000, 999999)}",
            f"+33 1 {self.r.randint(10, 99)} {self.r.randint(10, 99)} {self.r.randint(10, 99)} "
            f"{self.r.randint(10, 99)}",
            f"+91 {self.r.randint(70000, 99999)} {self.r.randint(10000, 99999)}",
        ])

    def luhn_complete(self, body: str) -> str:
        for check in "0123456789":
            digits = body + check
            total = 0
            for i, ch in enumerate(reversed(digits)):
                d = int(ch) * (2 if i % 2 else 1)
                total += d - 9 if d > 9 else d
            if total % 10 == 0:
                return digits

    def card(self) -> str:
        iin, n = self.r.choice([("4", 16), ("51", 16), ("55", 16), ("2221", 16), ("34", 15),
                                ("37", 15), ("6011", 16), ("4", 13), ("3530", 16)])
        d = self.luhn_complete(iin + self.s(string.digits, n - len(iin) - 1))
        if n == 15 and self.r.random() < 0.5:
            return f"{d[:4]} {d[4:10]} {d[10:]}"
        if n == 16:
            sep = self.r.choice([" ", "-", ""])
            return sep.join(d[i:i + 4] for i in range(0, 16, 4))
        return d

    def iban(self) -> str:
        cc, bban_len = self.r.choice([("DE", 18), ("GB", 18), ("FR", 23), ("NL", 14), ("ES", 20)])
        if cc == "GB":
            bban = self.s(string.ascii_uppercase, 4) + self.s(string.digits, 14)
        elif cc == "NL":
            bban = self.s(string.ascii_uppercase, 4) + self.s(string.digits, 10)
        else:
            bban = self.s(string.digits, bban_len)
        moved = bban + cc + "00"
        check = 98 - int("".join(str(int(c, 36)) for c in moved)) % 97
        iban = f"{cc}{check:02d}{bban}"
        return " ".join(iban[i:i + 4] for i in range(0, len(iban), 4)) if self.r.random() < 0.5 else iban

    def ipv4(self) -> str:
        return self.r.choice([f"10.{self.r.randint(0, 255)}.{self.r.randint(0, 255)}.{self.r.randint(1, 254)}",
                              f"192.168.{self.r.randint(0, 255)}.{self.r.randint(1, 254)}",
                              ".".join(str(self.r.randint(11, 223)) for _ in range(4))])

    def ipv6(self) -> str:
        g = [f"{self.r.randint(0, 0xffff):x}" for _ in range(8)]
        return self.r.choice([":".join(g), f"2001:db8::{g[0]}:{g[1]}", f"fe80::{g[2]}:{g[3]}:{g[4]}",
                              f"2a00:1450:4001:{g[5]}::{g[6]}"])

    def jwt(self) -> str:
        def enc(obj) -> str:
            return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
        head = enc({"alg": self.r.choice(["HS256", "RS256"]), "typ": "JWT"})
        body = enc({"sub": self.s(string.digits, 8), "name": self.name(), "iat": self.r.randint(1_600_000_000, 1_800_000_000)})
        return f"{head}.{body}.{self.s(ALNUM + '-_', 43)}"

    def pem(self, escaped: bool = False) -> str:
        tag = self.r.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"])
        lines = [self.s(B64, 64) for _ in range(self.r.randint(3, 8))] + [self.s(B64, 20) + "=="]
        nl = "\\n" if escaped else "\n"
        return f"-----BEGIN {tag}-----{nl}" + nl.join(lines) + f"{nl}-----END {tag}-----"

    def password(self) -> str:
        return self.r.choice([
            f"{self.r.choice(['Summer', 'Winter', 'Tally', 'Blue', 'hunter'])}{self.r.randint(1, 2025)}"
            f"{self.r.choice(['!', '#', '', '?', '*'])}",
            self.s(ALNUM + "!#%^*-_.", self.r.randint(10, 20)),
            f"correct-horse-{self.r.choice(['battery', 'staple'])}-{self.r.randint(10, 99)}",
        ])

    def token(self) -> str:
        return self.s(ALNUM, self.r.randint(32, 48))

    def secret_value(self) -> str:
        return self.r.choice([self.token(), self.s(string.hexdigits.lower(), 32) + "Z9",
                              self.s(ALNUM + "_-", 40)])

    def sha(self, n: int) -> str:
        return self.s("0123456789abcdef", n)

    def uuid(self) -> str:
        h = self.sha(32)
        u = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"
        return u.upper() if self.r.random() < 0.2 else u

    def version(self) -> str:
        return self.r.choice([f"{self.r.randint(0, 12)}.{self.r.randint(0, 30)}.{self.r.randint(0, 99)}",
                              f"v{self.r.randint(1, 12)}.{self.r.randint(0, 9)}.{self.r.randint(0, 9)}.{self.r.randint(0, 99)}",
                              f"{self.r.randint(1, 4)}.{self.r.randint(0, 9)}.{self.r.randint(0, 9)}-rc.{self.r.randint(1, 5)}",
                              f"v{self.r.randint(1, 30)}.{self.r.randint(0, 9)}"])

    def timestamp(self) -> str:
        y, mo, d = self.r.randint(2015, 2025), self.r.randint(1, 12), self.r.randint(1, 28)
        h, mi, se = self.r.randint(0, 23), self.r.randint(0, 59), self.r.randint(0, 59)
        return self.r.choice([f"{y}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{se:02d}.{self.r.randint(0, 999):03d}Z",
                              f"{y}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{se:02d},{self.r.randint(0, 999):03d}",
                              f"{d:02d}/{mo:02d}/{y}", f"{y % 100:02d}{mo:02d}{d:02d} {h:02d}{mi:02d}{se:02d}",
                              str(self.r.randint(1_400_000_000, 1_800_000_000)),
                              str(self.r.randint(1_400_000_000_000, 1_800_000_000_000))])

    def path(self) -> str:
        return self.r.choice(["/usr/local/lib/python3.11/site-packages/requests/adapters.py",
                              "src/billing/InvoiceService2.java", "C:\\Program Files\\Tally\\tally.exe",
                              "/var/log/nginx/access.log.1", "/home/deploy/releases/20240115103000/app",
                              "lib/Auth/OAuth2TokenProvider.php", "/user/root/rand/_temporary/_task_200811092030_0001_m_000151_0/part-00151",
                              "tests/test_api_v2.py", "~/.config/tally/settings.toml"])

    def order(self) -> str:
        while True:
            n = str(self.r.randint(10**14, 2 * 10**14 - 1))
            if self.luhn_complete(n[:-1]) != n or n[0] == "1":
                return n

    def negative(self) -> tuple[str, str]:
        kind = self.r.choice(["version", "sha7", "sha40", "uuid", "timestamp", "path", "duration",
                              "order", "blk", "hex", "pod", "mac", "javaobj", "netmask", "loopback",
                              "camel", "size", "bgl_loc", "retina", "git_remote", "digest"])
        value = {
            "version": self.version, "sha7": lambda: self.sha(7), "sha40": lambda: self.sha(40),
            "uuid": self.uuid, "timestamp": self.timestamp, "path": self.path,
            "duration": lambda: self.r.choice([f"{self.r.randint(1, 999)}ms", f"{self.r.randint(1, 59)}m{self.r.randint(1, 59)}s",
                                                f"PT{self.r.randint(1, 48)}H", f"{self.r.random() * 10:.3f}s"]),
            "order": self.order,
            "blk": lambda: f"blk_{self.r.choice(['', '-'])}{self.r.randint(10**17, 9 * 10**18)}",
            "hex": lambda: f"0x{self.sha(8)}",
            "pod": lambda: f"web-{self.sha(9)}-{self.s(string.ascii_lowercase + string.digits, 5)}",
            "mac": lambda: ":".join(self.sha(2) for _ in range(6)),
            "javaobj": lambda: f"com.tally.billing.Invoice@{self.sha(8)}",
            "netmask": lambda: "255.255.255.0", "loopback": lambda: "127.0.0.1",
            "camel": lambda: self.r.choice(["Base64EncoderV2Factory", "HttpClient5ConnectionManagerImpl",
                                            "AbstractOAuth2TokenValidatorV3", "org.apache.hadoop.mapreduce.v2.app.MRAppMaster"]),
            "size": lambda: str(self.r.randint(1, 10**9)),
            "bgl_loc": lambda: f"R{self.r.randint(0, 77):02d}-M{self.r.randint(0, 1)}-N{self.r.randint(0, 15)}-C:J{self.r.randint(2, 17):02d}-U{self.r.randint(1, 11):02d}",
            "retina": lambda: f"logo@{self.r.randint(2, 3)}x.png",
            "git_remote": lambda: "git@github.com:tallybird/ledger.git",
            "digest": lambda: f"sha256:{self.sha(64)}",
        }[kind]()
        return kind, value


def ticket(g: Gen) -> Doc:
    d = Doc("ticket")
    r = g.r
    form = r.randrange(8)
    if form == 0:
        d.add(f"Hi, this is {g.name()}. Please reach me at ").pii("EMAIL", g.email()).add(" or ")
        d.pii("PHONE", g.phone()).add(". Order ").neg("order", g.order()).add(" placed on ")
        d.neg("timestamp", g.timestamp()).add(" still hasn't shipped.")
    elif form == 1:
        d.add("I was charged twice on card ").pii("CARD", g.card()).add(" for invoice ")
        d.neg("uuid", g.uuid()).add(". Please refund to IBAN ").pii("IBAN", g.iban()).add(" asap, thanks!")
    elif form == 2:
        d.add("Our integration started failing after upgrading to ").neg("version", g.version())
        d.add(". Config:\n  base_url: https://api.tallybird.com/v2\n  api_key: ")
        d.pii("SECRET", g.secret_value())
        d.add("\n  timeout: ").neg("duration", f"{r.randint(1, 90)}s").add("\nLog file: ").neg("path", g.path())
    elif form == 3:
        key = r.choice(["STRIPE_SECRET_KEY", "stripe_key", "STRIPE_API_KEY"])
        d.add(f"Sorry, I pasted our .env in the last message by mistake:\n{key}=")
        d.pii("STRIPE_KEY", f"{r.choice(['sk_live_', 'rk_live_', 'sk_test_'])}{g.s(ALNUM, 24)}")
        d.add("\nOPENAI_API_KEY=").pii("OPENAI_KEY", r.choice(["sk-proj-" + g.s(ALNUM + "-_", 56), "sk-" + g.s(ALNUM, 48)]))
        d.add("\nDATABASE_URL=postgres://tally:").pii("PASSWORD", g.password().replace("#", "x").replace("?", "x"))
        d.add(f"@db{r.randint(1, 9)}.internal:5432/prod\nPlease delete it from the ticket.")
    elif form == 4:
        d.add("Can't log in since ").neg("timestamp", g.timestamp()).add(". Username ")
        d.add(f"{r.choice(FIRST)}{r.randint(1, 99)}, ")
        d.add(r.choice(["password: ", "my password=", "Password: ", "pwd="])).pii("PASSWORD", g.password())
        d.add(". I already tried the password reset link. Browser build ").neg("version", g.version()).add(".")
    elif form == 5:
        d.add(f"{g.name()} here, new phone number ").pii("PHONE", g.phone()).add(", please update. ")
        d.add("Also my address changed, mail goes to ").pii("EMAIL", g.email()).add(". Ref: ")
        d.neg("sha7", g.sha(7)).add(".")
    elif form == 6:
        d.add("Webhook stopped firing at ").neg("timestamp", g.timestamp()).add(": https://hooks.slack.com/services/")
        d.pii("SLACK_TOKEN", f"T{g.s(string.ascii_uppercase + string.digits, 8)}/B{g.s(string.ascii_uppercase + string.digits, 8)}/{g.s(ALNUM, 24)}")
        d.add(" . Bot token is ").pii("SLACK_TOKEN", f"xoxb-{g.s(string.digits, 11)}-{g.s(string.digits, 12)}-{g.s(ALNUM, 24)}")
        d.add(" (we rotated it on ").neg("timestamp", g.timestamp()).add(").")
    else:
        sa = {"type": "service_account", "project_id": "tally-prod", "private_key_id": g.sha(40)}
        d.add("Uploading our GCP key file as asked:\n{")
        d.add(", ".join(f'"{k}": "{v}"' for k, v in sa.items())).add(', "private_key": "')
        d.pii("PRIVATE_KEY", g.pem(escaped=True)).add('\\n", "client_email": "')
        d.pii("EMAIL", f"svc-{r.randint(1, 99)}@tally-prod.iam.gserviceaccount.com").add('"}\nMaps key: ')
        d.pii("GCP_API_KEY", "AIza" + g.s(ALNUM + "-_", 35))
    return d.maybe_negative(g, " (", ")")


def commit(g: Gen) -> Doc:
    d = Doc("commit")
    r = g.r
    form = r.randrange(7)
    if form == 0:
        d.add("Remove hard-coded token from ").neg("path", g.path()).add("\n\nThe token ")
        d.pii("GITHUB_TOKEN", r.choice(["ghp_" + g.s(ALNUM, 36), "github_pat_" + g.s(ALNUM, 22) + "_" + g.s(ALNUM, 59)]))
        d.add(" was committed in ").neg("sha7", g.sha(7)).add(" and has been revoked.")
    elif form == 1:
        d.add("Revert \"Bump deps to ").neg("version", g.version()).add("\"\n\nThis reverts commit ")
        d.neg("sha40", g.sha(40)).add(".\n\nCo-authored-by: ").add(g.name()).add(" <").pii("EMAIL", g.email()).add(">")
    elif form == 2:
        d.add("ci: rotate AWS credentials\n\naws_access_key_id = ").pii("AWS_ACCESS_KEY", "AKIA" + g.s(string.ascii_uppercase + "234567", 16))
        d.add("\naws_secret_access_key = ").pii("AWS_SECRET_KEY", g.s(B64, 40)).add("\nregion = eu-west-1")
    elif form == 3:
        d.add("Fix flaky test_login (took ").neg("duration", f"{r.randint(100, 9000)}ms").add(")\n\n")
        d.add("Test fixture used ").pii("JWT", g.jwt()).add(" as a bearer; replaced with a generated one.")
    elif form == 4:
        d.add("Add deploy key for ").neg("pod", f"web-{g.sha(9)}-{g.s(string.ascii_lowercase, 5)}").add("\n\n")
        d.pii("PRIVATE_KEY", g.pem()).add("\n\nTODO: move to vault.")
    elif form == 5:
        d.add("chore: update CI secrets\n\nGITLAB_TOKEN=").pii("GITLAB_TOKEN", "glpat-" + g.s(ALNUM + "_-", 20))
        d.add("\nHF_TOKEN=").pii("API_KEY", "hf_" + g.s(ALNUM, 34)).add("\nNPM_TOKEN=").pii("API_KEY", "npm_" + g.s(ALNUM, 36))
        d.add("\nANTHROPIC_API_KEY=").pii("API_KEY", "sk-ant-api03-" + g.s(ALNUM + "-_", 93))
    else:
        d.add("Harden retry in ").neg("path", g.path()).add(" (").neg("uuid", g.uuid()).add(")\n\n")
        d.add(r.choice(["session id ", "cookie ", "nonce "])).pii("TOKEN", g.token()).add(" leaked into logs; now masked.")
    return d.maybe_negative(g, " Refs ", ".")


def log(g: Gen) -> Doc:
    d = Doc("log")
    r = g.r
    form = r.randrange(8)
    if form == 0:
        d.neg("timestamp", g.timestamp()).add(" INFO dfs.DataNode$PacketResponder: Received block ")
        d.neg("blk", f"blk_{r.choice(['', '-'])}{r.randint(10**17, 9 * 10**18)}").add(" of size ")
        d.neg("size", str(r.randint(1, 67108864))).add(" from /").pii("IPV4", g.ipv4()).add(f":{r.randint(1024, 65535)}")
    elif form == 1:
        d.neg("timestamp", g.timestamp()).add(f" sshd[{r.randint(100, 99999)}]: Accepted password for {r.choice(FIRST)} from ")
        d.pii("IPV4", g.ipv4()).add(f" port {r.randint(1024, 65535)} ssh2")
    elif form == 2:
        d.neg("timestamp", g.timestamp()).add(" INFO auth login ok user=").pii("EMAIL", g.email())
        d.add(" ip=").pii("IPV6", g.ipv6()).add(" took ").neg("duration", f"{r.randint(1, 999)}ms")
    elif form == 3:
        d.pii("IPV4", g.ipv4()).add(" - - [").neg("timestamp", g.timestamp())
        d.add("] \"GET /api/v2/export?format=csv&access_token=").pii("SECRET", g.token())
        d.add(f' HTTP/1.1" 200 {r.randint(100, 99999)} "-" "curl/').neg("version", g.version()).add('"')
    elif form == 4:
        d.neg("timestamp", g.timestamp()).add(" ERROR payment declined card=").pii("CARD", g.card())
        d.add(" order=").neg("order", g.order()).add(" amount=").add(f"{r.randint(1, 999)}.{r.randint(0, 99):02d}")
    elif form == 5:
        d.neg("timestamp", g.timestamp()).add(" DEBUG http: Authorization: Bearer ").pii("JWT", g.jwt())
        d.add(" trace=").neg("uuid", g.uuid())
    elif form == 6:
        d.add("- ").neg("timestamp", str(r.randint(1117838570, 1136070000))).add(" 2005.06.03 ")
        d.neg("bgl_loc", f"R{r.randint(0, 77):02d}-M0-N{r.randint(0, 15)}-C:J{r.randint(2, 17):02d}-U11")
        d.add(" RAS KERNEL INFO ").add(r.choice(["instruction cache parity error corrected",
                                                  "generating core.2275", "CE sym 2, at "]))
        d.neg("hex", f"0x{g.sha(8)}").add(", mask ").neg("hex", f"0x{g.sha(8)}")
    else:
        d.neg("timestamp", g.timestamp()).add(" WARN worker: retrying with client_secret=")
        d.pii("SECRET", g.secret_value()).add(" and stripe ").pii("STRIPE_KEY", "sk_live_" + g.s(ALNUM, 24))
        d.add(", callback from ").pii("IPV4", g.ipv4()).add(" mask ").neg("netmask", "255.255.255.0")
    return d.maybe_negative(g, " ", "")


def build(seed: int = SEED, n: int = N_RECORDS) -> list[dict]:
    g = Gen(seed)
    makers = [ticket, commit, log]
    return [makers[i % 3](g).record() for i in range(n)]


def dumps(records: list[dict]) -> str:
    return "".join(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n" for rec in records)


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "corpus.jsonl"
    out.write_text(dumps(build()), encoding="utf-8")
    print(f"wrote {out}")
