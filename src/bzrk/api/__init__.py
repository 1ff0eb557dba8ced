"""Protocol surfaces over one result-stream model: gRPC, ADX REST, MCP, Berserk HTTP."""
