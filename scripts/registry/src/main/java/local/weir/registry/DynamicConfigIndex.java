package local.weir.registry;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.ArrayList;
import javax.enterprise.context.ApplicationScoped;
import javax.enterprise.inject.Produces;

/** Stands in for the build-time index of dynamic properties: none are dynamic here. */
@ApplicationScoped
public class DynamicConfigIndex {
    @Produces
    @ApplicationScoped
    DynamicConfigPropertyList properties() {
        return new DynamicConfigPropertyList(new ArrayList<>());
    }
}
