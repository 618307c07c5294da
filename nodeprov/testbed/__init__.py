"""A local cluster of simulated nodes: network, mount, UTS and PID namespaces with a real sshd."""
