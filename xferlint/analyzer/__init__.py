"""The analyzer: a device-lattice dataflow analysis over the frontend-neutral view."""
