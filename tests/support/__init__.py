"""What tests share: GraphQL documents and actions, test users, polling, the worker's
control, a controllable clock. Test modules import from here, never from each other."""
