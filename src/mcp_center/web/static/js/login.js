// The login form keeps the page the browser asked for: `#/servers/x/tools` opened while logged out
// is where the browser lands after logging in. The fragment never reaches the server; it rides on
// the form's own URL, and the redirect after login inherits it (Fetch: a redirect without a
// fragment keeps the request's). Only an in-page route (`#/...`) is kept.

const form = document.querySelector("form[action='/login']");
if (form && /^#\/[^\s]*$/.test(window.location.hash)) form.setAttribute("action", `/login${window.location.hash}`);
