"""Write questions*.jsonl from the hand-written question list below.

Standard library only. Adapted from benchmarks/docsqa/make_questions.py. The
questions were written by hand for this project over the HTTPX docs folder
(paraphrased, not copied from the docs); check_questions.py verifies them.

Split: none. This whole set is a held-out confirmation set (the diagnosis
domain is docsqa), so every row has split "heldout". The same rows are written
to questions.jsonl, questions.heldout.jsonl and questions.dev.jsonl (the
default file name read by a tool).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docs_questions as dq  # noqa: E402

HERE = Path(__file__).resolve().parent

# (doc file in docs/, question, [answer spans])
ANSWERABLE = [
    # quickstart.md
    (
        "quickstart.md",
        "How do I attach query-string arguments to a GET call without building the URL by hand?",
        ["params"],
    ),
    (
        "quickstart.md",
        "If I install the Zstandard compression package, which additional Content-Encoding value gets decoded automatically?",
        ["zstd"],
    ),
    (
        "quickstart.md",
        "What do I call on a response to turn 4xx and 5xx results into an exception?",
        ["raise_for_status", "raise_for_status()"],
    ),
    (
        "quickstart.md",
        "After redirects have been followed, which response attribute gives me the list of intermediate redirect responses?",
        ["history"],
    ),
    (
        "quickstart.md",
        "How can I stream a body exactly as the server sent it, e.g. still gzip-compressed, without any decoding?",
        ["iter_raw", "iter_raw()"],
    ),
    (
        "quickstart.md",
        "Which exception class covers every failure that happens while a request is being issued, such as connection problems?",
        ["RequestError", "httpx.RequestError"],
    ),
    # advanced/clients.md
    (
        "advanced__clients.md",
        "Which Client option lets me call client.get('/users') with a relative path by prefixing a host to every URL?",
        ["base_url"],
    ),
    (
        "advanced__clients.md",
        "If I set headers on the Client and also pass headers on a single call, does the call's value replace the client's or are both kept?",
        ["combined"],
    ),
    (
        "advanced__clients.md",
        "For a download progress bar, which response property reports how many raw bytes have arrived so far?",
        ["num_bytes_downloaded", "response.num_bytes_downloaded"],
    ),
    (
        "advanced__clients.md",
        "When I upload a file whose extension can't be recognised, which MIME type does the file part get?",
        ["application/octet-stream"],
    ),
    (
        "advanced__clients.md",
        "Which client method gives me a Request object that I can tweak, e.g. remove one header, before sending it?",
        ["build_request", ".build_request()"],
    ),
    (
        "advanced__clients.md",
        "Does uploading a huge file pull all of it into RAM, or how much of it is held in memory at a time?",
        ["one chunk"],
    ),
    # advanced/authentication.md
    (
        "advanced__authentication.md",
        "Which method must a subclass of httpx.Auth implement, yielding the requests to be sent?",
        ["auth_flow", "auth_flow(request)"],
    ),
    (
        "advanced__authentication.md",
        "My custom auth class signs the request payload; which class attribute must I set so the body is available to it?",
        ["requires_request_body"],
    ),
    (
        "advanced__authentication.md",
        "Which built-in auth class picks up per-host usernames and passwords from the curl-style credentials file in my home directory?",
        ["NetRCAuth", "httpx.NetRCAuth"],
    ),
    (
        "advanced__authentication.md",
        "Which environment variable do the docs read to find a non-default path for the machine/login/password credentials file?",
        ["NETRC"],
    ),
    ("advanced__authentication.md", "In which request header are Basic credentials carried?", ["Authorization"]),
    (
        "advanced__authentication.md",
        "If my custom auth scheme only supports the synchronous client, which exception should its async flow method raise?",
        ["RuntimeError"],
    ),
    # advanced/event-hooks.md
    (
        "advanced__event-hooks.md",
        "Which Client constructor argument registers callbacks that run on every outgoing request and incoming response?",
        ["event_hooks"],
    ),
    (
        "advanced__event-hooks.md",
        "Inside a response callback on the async client, which method do I await to load the body?",
        ["aread", "response.aread()"],
    ),
    (
        "advanced__event-hooks.md",
        "Callbacks registered on the async client can't be plain functions; what must they be?",
        ["async functions"],
    ),
    # advanced/extensions.md
    (
        "advanced__extensions.md",
        "I'm connecting to a bare IP address but need TLS to verify a particular hostname; which request extension handles that?",
        ["sni_hostname"],
    ),
    (
        "advanced__extensions.md",
        "Over HTTP/2, how can I find out the number of the multiplexed channel a response was delivered on?",
        ["stream_id"],
    ),
    (
        "advanced__extensions.md",
        "How do I send a request path with unusual escaping, such as a literal caret, that would normally be percent-encoded?",
        ["target"],
    ),
    (
        "advanced__extensions.md",
        "Which response extension exposes the underlying connection so I can read and write raw bytes after a CONNECT or Upgrade?",
        ["network_stream"],
    ),
    (
        "advanced__extensions.md",
        "Which key do I pass to get_extra_info to get the TLS socket object, e.g. to print the negotiated TLS version?",
        ["ssl_object"],
    ),
    # advanced/proxies.md
    ("advanced__proxies.md", "Which pip extra do I need before I can use a socks5:// proxy URL?", ["httpx[socks]"]),
    (
        "advanced__proxies.md",
        "Where in the proxy URL do I put the username and password for authenticating to the proxy?",
        ["userinfo"],
    ),
    (
        "advanced__proxies.md",
        "What is the proxy mechanism called where the proxy only opens a TCP connection to the target and the client does the TLS handshake through it?",
        ["Tunnelling", "HTTP Tunnel"],
    ),
    (
        "advanced__proxies.md",
        "Which Client keyword routes all HTTP and HTTPS traffic through one intermediary server, e.g. one listening on localhost:8030?",
        ["proxy"],
    ),
    # advanced/resource-limits.md
    (
        "advanced__resource-limits.md",
        "What is the default cap on the total number of connections a client's pool will open?",
        ["100"],
    ),
    (
        "advanced__resource-limits.md",
        "By default, how many idle persistent connections does the pool retain?",
        ["20"],
    ),
    (
        "advanced__resource-limits.md",
        "After how many seconds is an unused persistent connection dropped from the pool by default?",
        ["5"],
    ),
    # advanced/ssl.md
    ("advanced__ssl.md", "Which CA bundle is used by default to check server certificates?", ["certifi"]),
    (
        "advanced__ssl.md",
        "How do I skip server certificate checking completely, e.g. for a host with an expired certificate?",
        ["verify=False"],
    ),
    (
        "advanced__ssl.md",
        "Which package lets httpx trust the operating system's own certificate store?",
        ["truststore"],
    ),
    (
        "advanced__ssl.md",
        "Which SSLContext method do I call to supply a client certificate for mutual TLS?",
        ["load_cert_chain", ".load_cert_chain()"],
    ),
    (
        "advanced__ssl.md",
        "Which tool do the docs suggest for generating throwaway certificates for an HTTPS server on localhost?",
        ["trustme"],
    ),
    # advanced/text-encodings.md
    (
        "advanced__text-encodings.md",
        "Which Client argument sets the charset used when a server's Content-Type doesn't declare one?",
        ["default_encoding"],
    ),
    (
        "advanced__text-encodings.md",
        "With no charset in the response headers, which text encoding is assumed out of the box?",
        ["utf-8"],
    ),
    (
        "advanced__text-encodings.md",
        "Which third-party libraries are suggested for guessing a response's character set automatically?",
        ["chardet", "charset-normalizer"],
    ),
    # advanced/timeouts.md
    ("advanced__timeouts.md", "How many separate kinds of timeout can I tune individually?", ["four"]),
    (
        "advanced__timeouts.md",
        "Which exception is raised when I wait too long to obtain a free connection from the pool?",
        ["PoolTimeout"],
    ),
    (
        "advanced__timeouts.md",
        "Which exception signals that no piece of the response body arrived within the allowed time?",
        ["ReadTimeout"],
    ),
    (
        "advanced__timeouts.md",
        "If I don't specify anything, after how much network inactivity does a request give up?",
        ["5 seconds", "5s"],
    ),
    (
        "advanced__timeouts.md",
        "How do I give a client a 60 second limit for establishing connections but 10 seconds for everything else?",
        ["httpx.Timeout", "Timeout(10.0, connect=60.0)"],
    ),
    # advanced/transports.md
    (
        "advanced__transports.md",
        "Which HTTPTransport option pins the source IP that outgoing connections bind to?",
        ["local_address"],
    ),
    (
        "advanced__transports.md",
        "How do I make the client automatically try again when establishing a connection fails on a flaky network?",
        ["retries"],
    ),
    (
        "advanced__transports.md",
        "Which transport parameter lets me talk to the Docker daemon through its socket file instead of over TCP?",
        ["uds"],
    ),
    (
        "advanced__transports.md",
        "With the WSGI transport, which argument sets the client IP address that the application sees?",
        ["remote_addr"],
    ),
    (
        "advanced__transports.md",
        "The client doesn't fire my ASGI app's startup and shutdown events; what is suggested to use alongside AsyncClient?",
        ["LifespanManager", "asgi-lifespan"],
    ),
    (
        "advanced__transports.md",
        "Which class should I subclass to write my own transport for AsyncClient?",
        ["AsyncBaseTransport", "httpx.AsyncBaseTransport"],
    ),
    # api.md
    (
        "api.md",
        "Which response attribute measures the time between sending the request and closing the response?",
        ["elapsed"],
    ),
    ("api.md", "How do I get a copy of a URL object with only the scheme changed?", ["copy_with"]),
    ("api.md", "Which boolean property of a response tells me whether it is a redirect?", ["is_redirect"]),
    (
        "api.md",
        "Which method of the cookie store removes every cookie, optionally only those for a given domain or path?",
        ["clear"],
    ),
    # async.md
    (
        "async.md",
        "When I construct a transport explicitly for AsyncClient, e.g. to set retries, which class must I use?",
        ["AsyncHTTPTransport", "httpx.AsyncHTTPTransport"],
    ),
    ("async.md", "Besides asyncio, which async library can the async client run under?", ["trio"]),
    (
        "async.md",
        "If I call client.send(..., stream=True) myself, what must I make sure eventually gets called so connections don't leak?",
        ["Response.aclose()", "aclose"],
    ),
    (
        "async.md",
        "Which async method streams a response body one line at a time?",
        ["aiter_lines", "Response.aiter_lines()"],
    ),
    (
        "async.md",
        "How can I try out await expressions interactively in a console?",
        ["python -m asyncio", "IPython"],
    ),
    # code_of_conduct.md
    (
        "code_of_conduct.md",
        "Which organisation's code of conduct are contributors expected to follow?",
        ["Python Software Foundation"],
    ),
    (
        "code_of_conduct.md",
        "Which e-mail address takes private reports of conduct violations?",
        ["tom@tomchristie.com"],
    ),
    # compatibility.md
    (
        "compatibility.md",
        "Coming from requests, what is the httpx name of the attribute that holds the upcoming redirect request?",
        ["next_request", "response.next_request"],
    ),
    (
        "compatibility.md",
        "When I pass a str as the request body, which encoding turns it into bytes (requests would use latin1)?",
        ["utf-8"],
    ),
    (
        "compatibility.md",
        "requests has is_ok; which property is offered instead to test for a 2xx status?",
        ["is_success", "response.is_success"],
    ),
    (
        "compatibility.md",
        "What should I use for HTTP caching instead of cachecontrol or requests-cache?",
        ["Hishel"],
    ),
    ("compatibility.md", "In which mode must files be opened before they are uploaded?", ["binary mode", "binary"]),
    (
        "compatibility.md",
        "Which top-level exception class corresponds to the RequestException of requests?",
        ["HTTPError"],
    ),
    # contributing.md
    (
        "contributing.md",
        "Which local ports must be free because the test suite starts servers on them?",
        ["8000", "8001"],
    ),
    ("contributing.md", "What test coverage must a pull request reach for CI to pass?", ["100%"]),
    ("contributing.md", "Which script auto-formats the code base?", ["scripts/lint"]),
    (
        "contributing.md",
        "Which interactive proxy do the maintainers suggest running locally to debug requests sent via a proxy?",
        ["mitmproxy"],
    ),
    ("contributing.md", "Which file holds the version number that is bumped for a release?", ["__version__.py"]),
    # environment_variables.md
    (
        "environment_variables.md",
        "How do I stop httpx from picking up proxy and certificate settings from the process environment?",
        ["trust_env", "trust_env=False"],
    ),
    ("environment_variables.md", "Which environment variable lists hosts that should bypass the proxy?", ["NO_PROXY"]),
    (
        "environment_variables.md",
        "Which environment variable points httpx to a custom file of trusted CA certificates?",
        ["SSL_CERT_FILE"],
    ),
    (
        "environment_variables.md",
        "Which environment variable sets one proxy for requests of any scheme?",
        ["ALL_PROXY"],
    ),
    (
        "environment_variables.md",
        "If I point httpx at a directory of CA certificates, which OpenSSL utility should have been run on it?",
        ["c_rehash"],
    ),
    # exceptions.md
    (
        "exceptions.md",
        "Which exception category groups ConnectError, ReadError, WriteError and CloseError?",
        ["NetworkError"],
    ),
    ("exceptions.md", "What exception is raised when a chain of redirects goes on for too long?", ["TooManyRedirects"]),
    (
        "exceptions.md",
        "Which exception do I get when requesting a URL whose scheme the client can't handle?",
        ["UnsupportedProtocol"],
    ),
    (
        "exceptions.md",
        "Which exception is raised for a malformed URL and sits outside the HTTPError hierarchy?",
        ["InvalidURL"],
    ),
    (
        "exceptions.md",
        "Which exception tells me I tried to iterate over a response body that has already been read out?",
        ["StreamConsumed"],
    ),
    # http2.md
    ("http2.md", "Which client argument turns on HTTP/2 support?", ["http2=True"]),
    (
        "http2.md",
        "Which pip extra installs the optional dependencies for the binary, multiplexed protocol version?",
        ["httpx[http2]"],
    ),
    (
        "http2.md",
        "How can I check whether a response was actually transported over HTTP/2 rather than HTTP/1.1?",
        ["http_version", ".http_version"],
    ),
    # index.md
    ("index.md", "What is the oldest Python version that httpx supports?", ["3.9", "Python 3.9+"]),
    ("index.md", "Which dependency provides support for internationalised domain names?", ["idna"]),
    ("index.md", "Which dependency detects which async library is in use?", ["sniffio"]),
    ("index.md", "Which pip extra do I install to get the command-line client?", ["httpx[cli]"]),
    ("index.md", "Which package implements the HTTP/1.1 protocol under the hood?", ["h11"]),
    # logging.md
    (
        "logging.md",
        "Besides the httpx logger, which logger name do I configure to see connection-level debug output?",
        ["httpcore"],
    ),
    (
        "logging.md",
        "At which log level is the one-line summary of each request and its status emitted?",
        ["INFO"],
    ),
    (
        "logging.md",
        "Which logging function is used in the docs for dictionary-based configuration?",
        ["dictConfig", "logging.config.dictConfig"],
    ),
    # third_party_packages.md
    (
        "third_party_packages.md",
        "Is there an add-on for consuming server-sent event streams with httpx?",
        ["httpx-sse"],
    ),
    ("third_party_packages.md", "Which package adds WebSocket support?", ["httpx-ws"]),
    ("third_party_packages.md", "Which plugin provides a layer for re-trying failed requests?", ["httpx-retries"]),
    (
        "third_party_packages.md",
        "Which drop-in package protects against server-side request forgery?",
        ["httpx-secure"],
    ),
    # troubleshooting.md
    (
        "troubleshooting.md",
        "HTTPS calls through my proxy fail with a handshake timeout; which scheme should the proxy URL for https traffic use instead?",
        ["http://"],
    ),
    (
        "troubleshooting.md",
        "Which exception class wraps those TLS handshake failures when going through a proxy?",
        ["ProxyError", "httpx.ProxyError"],
    ),
]

# (question, answer_in_web)
UNANSWERABLE = [
    # answered by the stand-in web (httpcore docs), not by docs/
    (
        "I run httpx's AsyncClient under trio; which underlying network backend class is recommended for slightly better efficiency and cleaner tracebacks?",
        True,
    ),
    (
        "For tests below the transport layer, which class lets me feed the connection pool a list of canned raw bytes instead of opening a real socket?",
        True,
    ),
    ("Can httpx negotiate HTTP/2 on plain http:// URLs using the h2c Upgrade header?", True),
    (
        "If I know in advance that a server speaks HTTP/2, how do I skip protocol negotiation and use HTTP/2 from the start?",
        True,
    ),
    ("Which local_address value makes outgoing connections use IPv6?", True),
    # not answered anywhere
    (
        "When redirect following is switched on, how many redirects will a client follow at most before giving up?",
        False,
    ),
    ("What User-Agent string does httpx send when I don't set one?", False),
    ("What chunk size does iter_bytes use when I don't pass one?", False),
    ("Is there a limit on how many cookies the client's cookie store keeps per domain, and what is it?", False),
    ("How long does HTTPTransport wait between connection retries, and does it use exponential backoff?", False),
    ("Which hash algorithms does DigestAuth support, for example MD5 or SHA-256?", False),
    ("What minimum TLS version does the default SSL context enforce?", False),
    ("How can I cap the number of connections per host rather than for the whole pool?", False),
    ("Which environment variable turns on httpx debug logging?", False),
    ("How many connection retries does HTTPTransport make if I don't set that option?", False),
    ("On Windows, which file name does NetRCAuth look for by default?", False),
    ("What is the maximum number of concurrent streams opened on a single HTTP/2 connection?", False),
    ("Does httpx send an Expect: 100-continue header before uploading a large request body?", False),
    ("What is the largest total size of response headers accepted by default before an error is raised?", False),
]


def main():
    rows = dq.make_rows("docs2qa", ANSWERABLE, UNANSWERABLE, lambda i: "heldout")
    for name in ("questions.jsonl", "questions.heldout.jsonl", "questions.dev.jsonl"):
        dq.write_jsonl(HERE / name, rows)
    print(f"wrote {len(rows)} questions")


if __name__ == "__main__":
    main()
