"""Write questions*.jsonl from the hand-written question list below.

Standard library only. Questions were written by hand for this project
(paraphrased, not copied from the docs); check_questions.py verifies them.

Split (deterministic, hash-based, stratified): the rows are grouped into three
strata (answerable; unanswerable but answered by web.jsonl; unanswerable
everywhere). Within each stratum rows are ordered by sha256(id) (hex digest);
the first ceil(n/2) go to "diagnosis", the rest to "heldout".
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docs_questions as dq  # noqa: E402

HERE = Path(__file__).resolve().parent

# (doc file in docs/, question, [answer spans])
ANSWERABLE = [
    # middleware.md
    (
        "middleware.md",
        "If I turn on cross-origin support without listing any verbs, which HTTP method is the only one browsers may use?",
        ["GET"],
    ),
    (
        "middleware.md",
        "For how many seconds will browsers remember a cross-origin preflight result by default?",
        ["600"],
    ),
    (
        "middleware.md",
        "Out of the box, what is the name of the signed cookie that keeps per-user data between requests?",
        ["session"],
    ),
    (
        "middleware.md",
        "How long does the signed cookie holding user data stay valid if I don't configure its lifetime?",
        ["2 weeks"],
    ),
    (
        "middleware.md",
        "Below what response size, in bytes, does the compression middleware skip compressing by default?",
        ["500"],
    ),
    (
        "middleware.md",
        "Which method must I implement when I subclass the request/response style base middleware class?",
        ["dispatch"],
    ),
    (
        "middleware.md",
        "What status code is sent back when a request arrives with a hostname that isn't on the allowed list?",
        ["400"],
    ),
    (
        "middleware.md",
        "Responses with which content type are never compressed, so that server-sent events keep working?",
        ["text/event-stream"],
    ),
    # responses.md
    ("responses.md", "When I return a redirect without choosing a status, which code does the client get?", ["307"]),
    (
        "responses.md",
        "Setting a cookie on a response without specifying its cross-site policy: which SameSite value is applied?",
        ["lax"],
    ),
    (
        "responses.md",
        "What method on a response object lets me expire a cookie that was set earlier?",
        ["delete_cookie"],
    ),
    (
        "responses.md",
        "If a client asks for only part of a file and the byte range is valid, what status code is returned?",
        ["206", "206 Partial Content"],
    ),
    (
        "responses.md",
        "What status does a client get back when it requests a byte range of a file that can't be served?",
        ["416", "416 Range Not Satisfiable"],
    ),
    (
        "responses.md",
        "When I serve a file for download, what disposition type goes into the header unless I change it?",
        ["attachment"],
    ),
    (
        "responses.md",
        "To plug a faster third-party JSON serializer into the JSON response class, which method do I override?",
        ["render"],
    ),
    (
        "responses.md",
        "Which Python version is needed before I can mark a cookie as partitioned?",
        ["3.14", "Python 3.14+"],
    ),
    # requests.md
    (
        "requests.md",
        "How many uploaded files will the multipart form parser accept at most unless I raise the limit?",
        ["1000"],
    ),
    ("requests.md", "Which attribute of an uploaded file tells me its MIME type?", ["content_type"]),
    (
        "requests.md",
        "What kind of Python temporary file object holds the contents of an uploaded file?",
        ["SpooledTemporaryFile"],
    ),
    (
        "requests.md",
        "During long-polling, how can my handler find out whether the client has already gone away?",
        ["is_disconnected", "request.is_disconnected()"],
    ),
    (
        "requests.md",
        "Where should I stash extra per-request information such as the time the request started?",
        ["request.state"],
    ),
    (
        "requests.md",
        "Which header of a form part has to carry a filename so that the part is treated as an uploaded file?",
        ["Content-Disposition"],
    ),
    # routing.md
    (
        "routing.md",
        "Which converter should I use in a URL pattern to capture everything that remains, including slashes?",
        ["path"],
    ),
    (
        "routing.md",
        "If I don't list any verbs for a plain function endpoint, which HTTP method does it accept?",
        ["GET"],
    ),
    (
        "routing.md",
        "What function do I call to make my own URL converter available in route patterns?",
        ["register_url_convertor"],
    ),
    (
        "routing.md",
        "When there is no request object at hand, what method on the application turns a route name into a URL path?",
        ["url_path_for", "app.url_path_for"],
    ),
    (
        "routing.md",
        "Which class lets me send requests to different sets of routes depending on the domain name of the request?",
        ["Host"],
    ),
    (
        "routing.md",
        "What low-level class gives me just the routing, without wrapping the app in any middleware?",
        ["Router"],
    ),
    # exceptions.md
    ("exceptions.md", "What close code does the exception for socket endpoints use when I don't give one?", ["1008"]),
    (
        "exceptions.md",
        "Which built-in middleware turns unhandled server errors into 500 responses?",
        ["ServerErrorMiddleware"],
    ),
    (
        "exceptions.md",
        "With debug mode switched on, what does Starlette send instead of calling my custom handler for 500 errors?",
        ["traceback", "traceback response"],
    ),
    (
        "exceptions.md",
        "What kind of body does the default handler produce for a raised HTTP error?",
        ["plain-text", "plain-text HTTP responses"],
    ),
    (
        "exceptions.md",
        "Besides the status code 500, which key in the handler mapping catches every unexpected error?",
        ["Exception"],
    ),
    # testclient.md
    (
        "testclient.md",
        "What hostname does the test client report for the calling client unless I override it?",
        ["testserver"],
    ),
    ("testclient.md", "Which port number does the test client use as the client's address by default?", ["50000"]),
    (
        "testclient.md",
        "How do I stop the test client from re-raising application errors so that I can inspect the 500 response instead?",
        ["raise_server_exceptions=False", "raise_server_exceptions"],
    ),
    ("testclient.md", "Which async library does the test client run on when I don't pick one?", ["asyncio"]),
    (
        "testclient.md",
        "Which keyword argument for query strings can't be used when opening a test socket connection?",
        ["params"],
    ),
    ("testclient.md", "Which HTTP library is the test client built on?", ["httpx"]),
    # websockets.md
    (
        "websockets.md",
        "If I close a socket connection before accepting it, what HTTP status does the client receive?",
        ["403"],
    ),
    (
        "websockets.md",
        "Which method lets me reject a socket handshake with my own HTTP response rather than the default error?",
        ["send_denial_response"],
    ),
    (
        "websockets.md",
        "What exception do I get if the server lacks support for custom handshake rejection responses?",
        ["RuntimeError"],
    ),
    ("websockets.md", "Since which Starlette version does JSON go over text frames by default?", ["0.10.0"]),
    ("websockets.md", "What mode value makes JSON messages go over non-text frames?", ["binary"]),
    # config.md
    (
        "config.md",
        "When the same setting is defined in several places, where does Config look first?",
        ["environment variable", "an environment variable"],
    ),
    (
        "config.md",
        "Which class should wrap a password read from settings so it doesn't leak into tracebacks?",
        ["Secret"],
    ),
    (
        "config.md",
        "What argument lets Config namespace its lookups, e.g. reading APP_DEBUG when I ask for DEBUG?",
        ["env_prefix"],
    ),
    (
        "config.md",
        "What error is raised when a namespaced setting is looked up but the variable isn't defined?",
        ["KeyError"],
    ),
    # authentication.md
    (
        "authentication.md",
        "Which status code does a permission-protected view return by default when the user lacks the needed rights?",
        ["403"],
    ),
    (
        "authentication.md",
        "After being sent to a login page by a permission check, which query parameter holds the page the user first asked for?",
        ["next"],
    ),
    ("authentication.md", "Which decorator restricts a view to users holding certain credentials?", ["requires"]),
    ("authentication.md", "What built-in user class stands for an anonymous visitor?", ["UnauthenticatedUser"]),
    (
        "authentication.md",
        "Which argument of the auth middleware lets me customise the response sent for bad credentials?",
        ["on_error"],
    ),
    # staticfiles.md
    (
        "staticfiles.md",
        "When serving assets bundled in Python packages, which folder name is looked up inside each package by default?",
        ["statics"],
    ),
    (
        "staticfiles.md",
        "Which page is loaded automatically for a directory when the static app runs in HTML mode?",
        ["index.html"],
    ),
    ("staticfiles.md", "In HTML mode, which file is displayed when an asset can't be found?", ["404.html"]),
    (
        "staticfiles.md",
        "Which option controls whether the asset folder's existence is verified when the app is created?",
        ["check_dir"],
    ),
    # templates.md
    (
        "templates.md",
        "Which function is automatically available inside Jinja templates for linking to other pages of the app?",
        ["url_for"],
    ),
    ("templates.md", "To register a custom Jinja filter, which property of the templates object do I modify?", ["env"]),
    ("templates.md", "Can I use a coroutine function as a template context processor?", ["not supported"]),
    (
        "templates.md",
        "When testing, which attribute of the response shows the variables that were passed to the template?",
        ["context"],
    ),
    # background.md
    (
        "background.md",
        "Which class should I use to queue several jobs that run after the response is sent?",
        ["BackgroundTasks"],
    ),
    ("background.md", "What method adds one more job to a multi-job container?", ["add_task"]),
    # endpoints.md
    (
        "endpoints.md",
        "What does a class-based HTTP view return for a verb it has no handler method for?",
        ["405", "405 Method not allowed"],
    ),
    (
        "endpoints.md",
        "Which class attribute on a socket endpoint class decides how incoming data is decoded?",
        ["encoding"],
    ),
    (
        "endpoints.md",
        "Which hook on a socket endpoint class gets the close code when the client leaves?",
        ["on_disconnect"],
    ),
    # lifespan.md
    ("lifespan.md", "What kind of copy of the startup handler's shared data does each request see?", ["shallow"]),
    (
        "lifespan.md",
        "How do I have to use the test client so that my startup and teardown code actually runs?",
        ["context manager", "as a context manager"],
    ),
    (
        "lifespan.md",
        "Which anyio helper is suggested for managing async tasks started during startup?",
        ["create_task_group", "anyio.create_task_group()"],
    ),
    # threadpool.md
    ("threadpool.md", "How many synchronous functions can run in worker threads at the same time by default?", ["40"]),
    (
        "threadpool.md",
        "Which anyio function does Starlette use to run blocking code off the event loop?",
        ["anyio.to_thread.run_sync", "run_sync"],
    ),
    (
        "threadpool.md",
        "Which attribute of the thread limiter do I raise to allow more concurrent threads?",
        ["total_tokens"],
    ),
    # applications.md
    (
        "applications.md",
        "Where can I keep arbitrary global values such as an admin email on the application object?",
        ["app.state"],
    ),
    ("applications.md", "From inside an endpoint, how do I reach the application instance?", ["request.app"]),
    # index.md
    ("index.md", "Which package is the only hard dependency of Starlette?", ["anyio"]),
    ("index.md", "Which optional package must be installed to use signed cookie sessions?", ["itsdangerous"]),
    ("index.md", "What pip install target pulls in all of the optional dependencies at once?", ["starlette[full]"]),
    ("index.md", "Which package do I need so that reading form data from a request works?", ["python-multipart"]),
    # schemas.md
    ("schemas.md", "Which class builds OpenAPI documents from the app's routes?", ["SchemaGenerator"]),
    ("schemas.md", "Where does the schema builder take each endpoint's description from?", ["docstrings"]),
    (
        "schemas.md",
        "How do I keep a route out of the generated API spec?",
        ["include_in_schema=False", "include_in_schema"],
    ),
    # server-push.md
    (
        "server-push.md",
        "Which request method starts an HTTP/2 push of a stylesheet to the browser?",
        ["send_push_promise"],
    ),
    # graphql.md
    ("graphql.md", "In which version was the built-in GraphQL integration taken out completely?", ["0.17.0"]),
    # database.md
    ("database.md", "Which migration tool do the docs recommend for evolving the schema?", ["Alembic"]),
    (
        "database.md",
        "Which option of the database object makes sure tests don't persist changes between test cases?",
        ["force_rollback"],
    ),
    # contributing.md
    ("contributing.md", "Which script do I run to execute the project's test suite?", ["scripts/test"]),
    ("contributing.md", "What test coverage must a pull request reach for CI to pass?", ["100%"]),
    # third-party-packages.md
    ("third-party-packages.md", "Which adapter lets me deploy a Starlette app to AWS Lambda?", ["Mangum"]),
    (
        "third-party-packages.md",
        "Which add-on brings translations, localization and time zone support?",
        ["Starlette-Babel"],
    ),
    # release-notes.md
    ("release-notes.md", "In which release was support for Python 3.8 dropped?", ["0.45.0"]),
    ("release-notes.md", "What was the multipart parser's max_file_size setting renamed to?", ["spool_max_size"]),
    (
        "release-notes.md",
        "How big are the pieces a file is read and sent in by default when I return a file response?",
        ["64Kb"],
    ),
    # sponsorship.md
    ("sponsorship.md", "How much per month does the Gold sponsorship tier cost?", ["$500", "500"]),
]

# (question, answer_in_web)
UNANSWERABLE = [
    # answered only by the uvicorn stand-in web
    (
        "When I serve my Starlette app with uvicorn, how many seconds is an idle keep-alive connection kept open by default?",
        True,
    ),
    (
        "What is the largest WebSocket message, in bytes, accepted by default when my Starlette app runs under uvicorn?",
        True,
    ),
    (
        "How many pending connections can wait in the socket backlog by default when running a Starlette app with uvicorn?",
        True,
    ),
    (
        "Which environment variable sets the default number of worker processes for the server running my Starlette app?",
        True,
    ),
    ("What HTTP status does the server return for my Starlette app once the concurrency limit is exceeded?", True),
    (
        "How long is the default delay between checks for code changes when auto-reloading a Starlette app under uvicorn?",
        True,
    ),
    ("How often, by default, are WebSocket pings sent to clients of my Starlette app when served by uvicorn?", True),
    ("Which SSL ciphers are used by default when uvicorn serves my Starlette app over HTTPS?", True),
    # not answered anywhere
    ("Which hash algorithm does SessionMiddleware use to sign the session cookie?", False),
    ("Which CORSMiddleware argument enables responses to Private Network Access preflight requests?", False),
    ("What is the largest request body size Starlette accepts by default before rejecting a request?", False),
    ("What max-age does StaticFiles put in the Cache-Control header of the files it serves?", False),
    ("How many requests per minute does Starlette's built-in rate limiting middleware allow by default?", False),
    ("Does the TestClient follow redirects by default?", False),
    ("Which status code does TrustedHostMiddleware use when it redirects a request to the www host?", False),
    ("How many seconds does Starlette wait for the lifespan startup to finish before giving up?", False),
    ("For how long does a Starlette release line receive security fixes?", False),
    ("What separators does JSONResponse pass to the JSON encoder when rendering content?", False),
    ("Which argument of Route sets a per-route request timeout?", False),
    ("How long do the scopes granted by AuthCredentials stay valid before they expire?", False),
    ("How can I limit the number of open WebSocket connections per client IP in Starlette?", False),
    ("Which cache backend does Starlette provide for caching whole responses?", False),
    ("How many seconds does uvicorn wait for a graceful shutdown of my Starlette app by default?", False),
    (
        "Which template engine other than Jinja2, such as Mako or Chameleon, has a built-in Starlette integration class?",
        False,
    ),
    ("What is the default value of the max_redirects setting of RedirectResponse?", False),
    ("Which GZipMiddleware option lets me exclude certain paths from compression?", False),
]


def main():
    rows = dq.make_rows("docsqa", ANSWERABLE, UNANSWERABLE, lambda i: None)
    splits = dq.hash_splits(rows)
    for r in rows:
        r["split"] = splits[r["id"]]
    dq.write_jsonl(HERE / "questions.jsonl", rows)
    dq.write_jsonl(HERE / "questions.dev.jsonl", rows)
    for sp in ("diagnosis", "heldout"):
        dq.write_jsonl(HERE / f"questions.{sp}.jsonl", [r for r in rows if r["split"] == sp])
    print(f"wrote {len(rows)} questions")


if __name__ == "__main__":
    main()
