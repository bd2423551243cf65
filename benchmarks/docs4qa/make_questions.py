"""Write questions*.jsonl from the hand-written question list below.

Standard library only. Modelled on benchmarks/docs3qa/make_questions.py. The questions were
written by hand for this project over the AnyIO docs folder (paraphrased, not copied from the
docs); check_questions.py verifies them.

Split: by position. Rows are numbered in the order below (answerable first, grouped by doc file,
then unanswerable, the web-answered ones first); the row at 0-based index i (id docs4qa-<i+1>)
is in the "diagnosis" split when i % 3 == 0 and in "heldout" otherwise. Writes questions.jsonl
(all rows), questions.diagnosis.jsonl, questions.heldout.jsonl and questions.dev.jsonl (= the
diagnosis rows, the default file name read by a tool).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docs_questions as dq  # noqa: E402

HERE = Path(__file__).resolve().parent

# (doc file in docs/, question, [answer spans])
ANSWERABLE = [
    # basics.rst
    ("basics.rst", "What is the oldest Python release this library can run on?", ["3.10", "Python 3.10"]),
    (
        "basics.rst",
        "If I call anyio.run without choosing an event loop library, which one does my program run on?",
        ["asyncio"],
    ),
    (
        "basics.rst",
        "How do I hand loop-specific settings, such as turning on debug mode, through anyio.run?",
        ["backend_options"],
    ),
    (
        "basics.rst",
        "Which asyncio backend setting swaps in the faster third-party event loop implementation when it is installed?",
        ["use_uvloop"],
    ),
    ("basics.rst", "What should I pip install to get a compatible Trio together with the library?", ["anyio[trio]"]),
    # faq.rst
    ("faq.rst", "Up to which major version was Curio still usable as a backend?", ["v3.0"]),
    (
        "faq.rst",
        "Which helper library would first need to recognise a running Twisted reactor before Twisted could become a backend?",
        ["sniffio"],
    ),
    # support.rst
    ("support.rst", "Apart from Stack Overflow, where can I chat with others to get help?", ["Gitter"]),
    # contributing.rst
    (
        "contributing.rst",
        "What command runs the test environments concurrently instead of one after another?",
        ["tox -p"],
    ),
    ("contributing.rst", "How do I build the HTML documentation on my machine?", ["tox -e docs"]),
    (
        "contributing.rst",
        "What should my commit message say so that merging the PR closes the related issue?",
        ["Fixes XXX.", "Closes XXX.", "Fixes XXX", "Closes XXX"],
    ),
    # tasks.rst
    (
        "tasks.rst",
        "If the child launched through tg.start() never reports that it is ready, what error does the awaiting caller get?",
        ["RuntimeError"],
    ),
    (
        "tasks.rst",
        "How can I get a handle to the launched task back from TaskGroup.start rather than only the value the child reported?",
        ["return_handle=True", "return_handle"],
    ),
    ("tasks.rst", "Since which release does start_soon give back a handle object?", ["4.14.0"]),
    (
        "tasks.rst",
        "When two child tasks fail at the same time, what kind of exception leaves the task group?",
        ["ExceptionGroup", "BaseExceptionGroup"],
    ),
    (
        "tasks.rst",
        "On Pythons without except*, which third-party package offers a catch() helper for grouped errors?",
        ["exceptiongroup"],
    ),
    (
        "tasks.rst",
        "Which Python version added the asyncio call graph inspection that the task groups now cooperate with?",
        ["3.14", "Python 3.14"],
    ),
    # cancellation.rst
    (
        "cancellation.rst",
        "Which timeout context manager raises an error when time is up, instead of silently leaving the block?",
        ["fail_after"],
    ),
    ("cancellation.rst", "What exception do I get when a fail_after deadline passes?", ["TimeoutError"]),
    (
        "cancellation.rst",
        "After a move_on_after block finishes, which scope attribute tells me whether the timeout actually fired?",
        ["cancelled_caught"],
    ),
    (
        "cancellation.rst",
        "How do I find out the deadline that really applies to my code, taking outer scopes into account?",
        ["current_effective_deadline"],
    ),
    (
        "cancellation.rst",
        "Each event loop raises its own cancellation exception; how do I find out which class to catch?",
        ["get_cancelled_exc_class"],
    ),
    (
        "cancellation.rst",
        "From which version do async generator fixtures in pytest run start to finish in a single task?",
        ["3.6"],
    ),
    # synchronization.rst
    (
        "synchronization.rst",
        "Which constructor flag makes a Lock or Semaphore skip the extra yield when nobody else holds it?",
        ["fast_acquire=True", "fast_acquire"],
    ),
    (
        "synchronization.rst",
        "Which property do I set to change how many slots a capacity limiter allows?",
        ["total_tokens"],
    ),
    (
        "synchronization.rst",
        "What is raised when a second task tries to use an object protected by a ResourceGuard while the first is still inside?",
        ["BusyResourceError"],
    ),
    ("synchronization.rst", "Which Condition method wakes up every waiting task at once?", ["notify_all"]),
    (
        "synchronization.rst",
        "There is no Queue class here; what should I use to pass items between producer and consumer tasks?",
        ["memory object streams"],
    ),
    (
        "synchronization.rst",
        "Which primitive works like a semaphore but lets each borrower hold only one token at a time?",
        ["CapacityLimiter", "capacity limiters"],
    ),
    # streams.rst
    (
        "streams.rst",
        "How big is the buffer of a memory object stream when I don't ask for a size?",
        ["0", "buffer size of 0"],
    ),
    (
        "streams.rst",
        "Once every clone of the receiving end has been closed, what does sending on a memory stream raise?",
        ["BrokenResourceError"],
    ),
    (
        "streams.rst",
        "Which method of the buffered receive stream reads precisely a given number of bytes?",
        ["receive_exactly"],
    ),
    ("streams.rst", "How can I push bytes into a buffered stream's buffer by hand?", ["feed_data"]),
    (
        "streams.rst",
        "My protocol never does the TLS close handshake; what option should I give when wrapping the stream?",
        ["standard_compatible=False", "standard_compatible"],
    ),
    (
        "streams.rst",
        "Which library is suggested for making throwaway certificates on the fly in tests?",
        ["trustme"],
    ),
    # typedattrs.rst
    (
        "typedattrs.rst",
        "What method do I call on a stream to look up a piece of information from whatever layer underneath provides it?",
        ["extra", "TypedAttributeProvider.extra"],
    ),
    (
        "typedattrs.rst",
        "Which key gives me the IP address of the peer on a TCP connection?",
        ["SocketAttribute.remote_address", "remote_address"],
    ),
    (
        "typedattrs.rst",
        "Which base class should the container for my own custom attribute keys inherit from?",
        ["TypedAttributeSet"],
    ),
    (
        "typedattrs.rst",
        "Which property must my class implement to supply the values of its custom attributes?",
        ["extra_attributes"],
    ),
    (
        "typedattrs.rst",
        "Which function do I call to declare each field in my own attribute set?",
        ["typed_attribute", "typed_attribute()"],
    ),
    # networking.rst
    (
        "networking.rst",
        "Instead of returning an empty bytes object, how does the library tell me the peer has closed the stream?",
        ["EndOfStream"],
    ),
    (
        "networking.rst",
        "Which connect_tcp argument turns on encryption right after the connection is made?",
        ["tls=True", "tls"],
    ),
    (
        "networking.rst",
        "Which method of a UNIX socket stream picks up open file descriptors sent by another process?",
        ["receive_fds"],
    ),
    (
        "networking.rst",
        "How do I get a UDP socket tied to one peer so I don't repeat the host and port on every send?",
        ["create_connected_udp_socket"],
    ),
    (
        "networking.rst",
        "Which helper turns a host/port pair or a socket path into a connectable object for my client class?",
        ["as_connectable"],
    ),
    # threads.rst
    (
        "threads.rst",
        "How many worker threads can be busy at once by default when I don't pass my own limiter?",
        ["40"],
    ),
    (
        "threads.rst",
        "Which function gives me the default thread limiter so I can raise the thread cap?",
        ["current_default_thread_limiter", "to_thread.current_default_thread_limiter"],
    ),
    (
        "threads.rst",
        "How do I let the awaiting task be cancelled while a blocking call is still running in its thread?",
        ["abandon_on_cancel=True", "abandon_on_cancel"],
    ),
    (
        "threads.rst",
        "From a blocking loop in a worker thread, how can I check now and then whether the caller was cancelled?",
        ["check_cancelled", "from_thread.check_cancelled"],
    ),
    (
        "threads.rst",
        "Which function launches an event loop in a thread of its own and gives me a portal to it?",
        ["start_blocking_portal", "from_thread.start_blocking_portal"],
    ),
    (
        "threads.rst",
        "For a synchronous API called from many threads, which class lets them share one portal instead of each starting one?",
        ["BlockingPortalProvider"],
    ),
    # subprocesses.rst
    (
        "subprocesses.rst",
        "How long does an idle process started for to_process.run_sync stay around before exiting?",
        ["5 minutes"],
    ),
    (
        "subprocesses.rst",
        "What's the one-call way to execute an external command and get its finished result?",
        ["run_process"],
    ),
    (
        "subprocesses.rst",
        "Which function gives me a process handle for talking to a child's pipes interactively?",
        ["open_process"],
    ),
    (
        "subprocesses.rst",
        "Where does the output of print() go when it runs inside a worker process?",
        ["/dev/null"],
    ),
    (
        "subprocesses.rst",
        "What must arguments and return values be to cross over to a worker process?",
        ["pickleable"],
    ),
    # subinterpreters.rst
    (
        "subinterpreters.rst",
        "Which Python version do I need before I can run functions in separate interpreters?",
        ["3.13", "Python 3.13"],
    ),
    (
        "subinterpreters.rst",
        "Which module's run_sync sends a CPU-heavy function to a separate interpreter?",
        ["to_interpreter", "to_interpreter.run_sync"],
    ),
    (
        "subinterpreters.rst",
        "Is running code in separate interpreters considered ready for production use?",
        ["experimental"],
    ),
    (
        "subinterpreters.rst",
        "Which module's functions can't be run this way, which also rules out functions typed into the REPL?",
        ["__main__"],
    ),
    # fileio.rst
    (
        "fileio.rst",
        "How do I turn a file object I already opened the normal way into an async one?",
        ["wrap_file"],
    ),
    ("fileio.rst", "Which function opens a file for reading with await?", ["open_file"]),
    (
        "fileio.rst",
        "What can I pass to control how many file operations run concurrently, instead of the shared default?",
        ["CapacityLimiter", "limiter"],
    ),
    (
        "fileio.rst",
        "The async Path class offers the pathlib API of which Python version on every supported interpreter?",
        ["3.10", "Python 3.10"],
    ),
    # tempfile.rst
    (
        "tempfile.rst",
        "Which temporary file class keeps small data in memory instead of writing it to disk straight away?",
        ["SpooledTemporaryFile"],
    ),
    (
        "tempfile.rst",
        "Which low-level async call creates a temp file and returns a descriptor and a path?",
        ["mkstemp"],
    ),
    (
        "tempfile.rst",
        "How do I get the default temp folder location as bytes rather than a string?",
        ["gettempdirb"],
    ),
    (
        "tempfile.rst",
        "Which class gives a temporary file that has a name I can see in the filesystem?",
        ["NamedTemporaryFile"],
    ),
    # signals.rst
    (
        "signals.rst",
        "Which function lets my program iterate over incoming OS signals such as a termination request?",
        ["open_signal_receiver"],
    ),
    (
        "signals.rst",
        "Which signal can't be relied on for graceful shutdown on Windows because it isn't supported there?",
        ["SIGTERM", "signal.SIGTERM"],
    ),
    (
        "signals.rst",
        "On Ctrl+C, which backend raises the exception inside my code rather than shutting all tasks down?",
        ["Trio"],
    ),
    (
        "signals.rst",
        "Which signal is customarily sent to ask a program to reload its configuration?",
        ["SIGHUP", "signal.SIGHUP"],
    ),
    # contextmanagers.rst
    (
        "contextmanagers.rst",
        "Which mix-in do I inherit to write an async context manager as a single generator method?",
        ["AsyncContextManagerMixin"],
    ),
    (
        "contextmanagers.rst",
        "What is the name of the method I define when using the synchronous mix-in?",
        ["__contextmanager__"],
    ),
    (
        "contextmanagers.rst",
        "If my hand-written async enter method fails halfway, which method is never called, leaving nested resources open?",
        ["__aexit__", "__aexit__()"],
    ),
    (
        "contextmanagers.rst",
        "How do I call the parent class's generator-based context logic from a subclass?",
        ["super().__contextmanager__()", "super().__asynccontextmanager__()"],
    ),
    # testing.rst
    (
        "testing.rst",
        "Which pytest setting runs every async test through the plugin without marking each test?",
        ["anyio_mode", "--anyio-mode=auto"],
    ),
    (
        "testing.rst",
        "Which marker should I apply to async tests when another async test plugin is installed too?",
        ["pytest.mark.anyio"],
    ),
    (
        "testing.rst",
        "Which fixture do I override in conftest.py to choose which event loops the tests use?",
        ["anyio_backend"],
    ),
    ("testing.rst", "Which fixture gives one test an unused TCP port number?", ["free_tcp_port"]),
    (
        "testing.rst",
        "Which fixture gives just the backend's name, since the backend fixture may return a tuple?",
        ["anyio_backend_name"],
    ),
    (
        "testing.rst",
        "What error code can show up if another process grabs the supposedly free port before my test binds it?",
        ["EADDRINUSE"],
    ),
    # api.rst
    (
        "api.rst",
        "Which helper in the testing utilities waits until every other task is blocked?",
        ["wait_all_tasks_blocked", "anyio.wait_all_tasks_blocked"],
    ),
    (
        "api.rst",
        "Which exception type is listed for a buffered read that can't find the separator it was looking for?",
        ["DelimiterNotFound", "anyio.DelimiterNotFound"],
    ),
    # migration.rst
    (
        "migration.rst",
        "In version 4, how do I write a memory stream creation typed for ints with a buffer of 100?",
        ["create_memory_object_stream[int](100)"],
    ),
    (
        "migration.rst",
        "Which backend option replaces a custom asyncio event loop policy after upgrading to version 4?",
        ["loop_factory"],
    ),
    (
        "migration.rst",
        "Which compatibility helpers from 2.2 let library code await calls the same way under versions 2 and 3?",
        ["maybe_async", "maybe_async_cm", "maybe_async()"],
    ),
    (
        "migration.rst",
        "What replaced the awaitable TaskGroup.spawn() in version 3?",
        ["start_soon", "TaskGroup.start_soon"],
    ),
    (
        "migration.rst",
        "What did run_sync_in_worker_thread() become after the threading functions moved?",
        ["to_thread.run_sync"],
    ),
    (
        "migration.rst",
        "Which warning is emitted on version 3 when the old awaited style of those now-synchronous calls is used?",
        ["DeprecationWarning"],
    ),
    # why.rst
    (
        "why.rst",
        "What is asyncio's cancellation style called, where the error is delivered to the task only once?",
        ["edge cancellation"],
    ),
    (
        "why.rst",
        "What name is given to the stateful cancellation model that cancel scopes use?",
        ["level cancellation"],
    ),
    (
        "why.rst",
        "Which method of a memory receive stream reports how many items are queued and how many tasks are waiting?",
        ["statistics", "MemoryObjectReceiveStream.statistics"],
    ),
    (
        "why.rst",
        "The misuse of asyncio.shield in which client library contributed to a ChatGPT outage?",
        ["Python Redis client", "Redis", "redis-py"],
    ),
    (
        "why.rst",
        "Which third-party packages do asyncio users often reach for to get async file and path access?",
        ["aiofiles", "aiopath"],
    ),
    (
        "why.rst",
        "What do I give up by using the context manager mix-ins instead of writing the enter and exit methods myself?",
        ["re-entrancy"],
    ),
]

# (question, answered by the stand-in web?)
UNANSWERABLE = [
    # answered by the stand-in web (Trio docs), not by docs/
    (
        "Which trio.run parameter decides whether a single child exception gets wrapped in an exception group when the "
        "code runs on the Trio backend, and what does it default to now?",
        True,
    ),
    (
        "Can I run my code on the Trio backend on top of another event loop, such as a GUI toolkit's, and which function "
        "starts that?",
        True,
    ),
    (
        "Memory object streams have no buffer by default; which classic concurrency model does an unbuffered channel "
        "like that correspond to?",
        True,
    ),
    (
        "For tests on the Trio backend, which Trio class provides a fake clock that jumps ahead when every task is asleep?",
        True,
    ),
    (
        "Which Trio facility gives scheduler hooks, such as one called before each task step, for monitoring code that "
        "runs on the Trio backend?",
        True,
    ),
    # not answered anywhere
    ("How many worker processes can to_process.run_sync have running at the same time by default?", False),
    ("What listen backlog does create_tcp_listener use when I don't pass one?", False),
    ("Which create_tcp_listener argument enables SO_REUSEPORT so several processes can share the port?", False),
    ("Does run_process raise when the command exits with a non-zero status, and which exception does it use?", False),
    ("When I call receive() on a TCP stream without an argument, what is the most bytes it will return?", False),
    ("Which text encoding do the text stream wrappers use when I don't give one?", False),
    ("Which Semaphore argument sets a ceiling so that releasing it too many times is caught?", False),
    ("Is there a time limit on the TLS handshake in TLSListener, and what is it by default?", False),
    (
        "Which address does create_tcp_listener bind to when local_host is left out: all IPv4 and IPv6 interfaces?",
        False,
    ),
    ("Which open_process argument sets the directory the child process starts in?", False),
    ("Which field of a memory stream's statistics object holds the number of items currently buffered?", False),
    ("On Windows, which asyncio event loop class is needed for subprocess support to work?", False),
    ("Does connect_tcp turn off Nagle's algorithm on the sockets it opens?", False),
    ("How do I find out the negotiated cipher or TLS protocol version of a TLS stream?", False),
    ("Is there an environment variable that picks the default backend without changing my code?", False),
    ("What is the minimum Trio release that the trio extra installs?", False),
    ("How many subinterpreters can to_interpreter.run_sync use at once by default?", False),
    ("Which file mode does open_file use when I don't pass one?", False),
    ("Can UNIX socket listeners bind to Linux's abstract socket namespace?", False),
    ("How do I turn on TCP keepalive for a connection made with connect_tcp?", False),
]


def split_of(index):
    return "diagnosis" if index % 3 == 0 else "heldout"


def main():
    rows = dq.make_rows("docs4qa", ANSWERABLE, UNANSWERABLE, split_of)
    dq.write_index_splits(HERE, rows)


if __name__ == "__main__":
    main()
