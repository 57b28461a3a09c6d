// Package keeper runs an agent outside the booth under a keeper: this
// executable again (MaybeRun), which makes itself a child subreaper, starts
// the agent in its own process group and ends the agent's whole tree when
// the agent exits, when jukebox dies (kill -9 included: the keeper holds
// the read end of a pipe only jukebox writes, and its end means jukebox is
// gone), or when a second stop signal (or the end of the grace after the
// first) reaches the group. Every orphan of the agent's tree, a
// double-forked daemon that left its session included, is reparented to
// the keeper, which kills what is under it until nothing is.
//
// The keeper talks to jukebox over two inherited descriptors: fd 3 is the
// lifeline (jukebox's end closes: end the tree), fd 4 carries reports, one
// a line: "started PID" or "failed ERRNO MESSAGE", then "interrupt" for each
// SIGINT that reached the group, then "end STATUS" (the agent's raw wait
// status).
package keeper
