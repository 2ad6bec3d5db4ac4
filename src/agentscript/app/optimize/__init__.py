"""`agentscript optimize`: the program's declared choices searched on an eval's cases, the
winner kept only when held-out cases show it better, and written back into the source."""
