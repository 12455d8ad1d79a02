package mcpgateway

// Refreshed receives a server's name after each refresh of its tools.
func Refreshed(g *Gateway) <-chan string { return g.refreshed }
