"""The web view: people look at what their agents remember, in a browser.

A viewer logs in with an XMPP account of the deployment; the login is checked by the
XMPP server itself (``viewers``), and every page is made of memory ops sent over XMPP
as that account (``pages``), so the memory agents' access check is the only one: a
viewer sees its personal memories and the spaces it belongs to, and edits what a
writer of them may. A space's page follows the space's change notices (``live``).
``guard`` holds what every page needs against a hostile browser: CSRF tokens, cookie
flags, security headers, pages of errors without tracebacks. aiohttp and jinja2, the
stack SPADE already brings (``app``).
"""
