"""The steps between test stages (netplan, SSH keys, artifact sync, the compose stack). Each step takes
everything from the cluster definition, prints what it will change before changing it, and is idempotent."""
